package patroni

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// This file decodes what the API server holds for a Patroni cluster using
// Patroni's Kubernetes DCS: the ConfigMaps <scope>-leader (the leader
// lock), <scope>-config (the dynamic configuration and the cluster's
// system identifier), <scope>-sync and <scope>-failover, or with
// use_endpoints the Endpoints <scope>, <scope>-config, <scope>-sync and
// <scope>-failover; and which pod label carries each member's role.

var _ engine.Keeper = Engine{}

// Keep implements engine.Keeper: the scope, the scope and role labels and
// the kind of DCS object as templateSettings reads them; the role
// label's values master and primary mean the primary.
func (Engine) Keep(t model.PodTemplate, objs model.APIObjects, c *model.ClusterFacts) model.Kept {
	// A Patroni member on an empty volume bootstraps itself from the
	// leader (or initialises the cluster): it registers on its own.
	c.Shape = model.ShapeSelfRegistering
	if c.Template.OperatorOwner == "" && zalando(t, c.Template) {
		// Zalando's operator sets no owner reference by default
		// (enable_owner_references false), yet its StatefulSet is the
		// postgresql's, named as it is.
		c.Template.OperatorOwner = "postgresql/" + c.Name
	}
	if c.Template.OperatorOwner != "" {
		c.Shape = model.ShapeOperatorOwned
	}
	c.Patroni = decodeCluster(t, objs, c.Name, c.Template)
	if p := c.Patroni; p.DCS != "" {
		c.Notes = append(c.Notes, fmt.Sprintf("Patroni's DCS on %s, by %s; leader lock %s", p.DCS, p.DCSFrom, p.LeaderObject()))
	}
	if p := c.Patroni; p.Orphaned != "" {
		c.Notes = append(c.Notes, p.Orphaned)
	}
	c.SelfWritten = &model.SelfWritten{Labels: []string{c.Patroni.RoleLabel}, Annotations: []string{StatusAnnotation}}
	c.Record = Record(c.Patroni)
	k := model.Kept{RoleLabel: c.Patroni.RoleLabel, PrimaryRoles: []string{"master", "primary"}}
	if c.Patroni.DCS == model.DCSEndpoints {
		// Patroni writes the Endpoints <scope> with the leader's address,
		// for the Service of that name (which has no selector).
		k.PrimaryService = c.Patroni.Scope
	}
	return k
}

// zalando reports whether t's Patroni container is Spilo as Zalando's
// postgres-operator configures it (SPILO_CONFIGURATION).
func zalando(t model.PodTemplate, tf model.TemplateFacts) bool {
	c := t.Container(tf.Container)
	if c == nil || !spilo(*c) {
		return false
	}
	for _, e := range c.Env {
		if e.Name == "SPILO_CONFIGURATION" {
			return true
		}
	}
	return false
}

// StatusAnnotation is the pod annotation a Patroni member rewrites with
// its state on every loop (the Kubernetes DCS's member record).
const StatusAnnotation = "status"

// Record is Patroni's record of leadership in the DCS: its timeline
// switches and the leader lock's last acquisition, and who holds the
// lock until when.
func Record(p *model.PatroniClusterFacts) *model.EngineRecord {
	r := &model.EngineRecord{}
	for _, s := range p.History {
		d := fmt.Sprintf("timeline %d ended at %s (%s)", s.Timeline, format.LSN(s.LSN), format.Dash(s.Reason))
		if s.NewLeader != "" {
			d += "; " + s.NewLeader + " leads timeline " + fmt.Sprint(s.Timeline+1)
		}
		r.Events = append(r.Events, model.RecordEvent{At: s.At, Member: s.NewLeader, Event: "timeline-switch", Detail: d})
	}
	if p.LockFound && !p.LockAcquired.IsZero() {
		r.Events = append(r.Events, model.RecordEvent{At: p.LockAcquired, Member: p.LockHolder, Event: "leader-lock",
			Detail: fmt.Sprintf("%s took the leader lock (%s; %d transitions so far)", format.Dash(p.LockHolder), p.LeaderObject(), p.LockTransitions)})
	}
	if p.LockFound && p.LockHolder != "" {
		r.Holder = p.LockHolder
		if !p.LockRenew.IsZero() && p.LockTTL > 0 {
			r.HolderExpires = p.LockRenew.Add(p.LockTTL)
		}
	}
	return r
}

// settings are where a cluster's Patroni keeps its DCS and which pod
// labels it writes, as its pod template says.
type settings struct {
	scope, scopeLabel, roleLabel string
	// dcs is model.DCSConfigMaps or model.DCSEndpoints, "" when the
	// template does not say; dcsFrom is the variable that says it.
	dcs, dcsFrom string
}

// Crunchy PGO's labels: the PostgresCluster's name on every object, and
// the scope and role labels of the Patroni configuration it writes.
const (
	pgoClusterLabel = "postgres-operator.crunchydata.com/cluster"
	pgoScopeLabel   = "postgres-operator.crunchydata.com/patroni"
	pgoRoleLabel    = "postgres-operator.crunchydata.com/role"
)

// templateSettings reads c's settings: Patroni's own variables
// (PATRONI_SCOPE, PATRONI_KUBERNETES_SCOPE_LABEL, …_ROLE_LABEL,
// …_USE_ENDPOINTS) first, as Patroni lets them override its file, then
// Spilo's (SCOPE, KUBERNETES_SCOPE_LABEL and KUBERNETES_ROLE_LABEL with
// Spilo's defaults version and spilo-role, and KUBERNETES_USE_CONFIGMAPS:
// set to anything but "" it is ConfigMaps, else Endpoints, as
// configure_spilo.py decides), then Patroni's defaults (cluster-name,
// role). Crunchy PGO's settings are in a file it writes; its pod
// template's labels say them (pgoScopeLabel). The scope falls back to
// the pod template's scope label, then to name.
func templateSettings(t model.PodTemplate, c *model.Container, name string) settings {
	s := settings{scopeLabel: "cluster-name", roleLabel: "role"}
	lit := func(v string) string {
		if c == nil {
			return ""
		}
		x, _ := c.Literal(v)
		return x
	}
	if c != nil && spilo(*c) {
		s.scope = lit("SCOPE")
		// Spilo's own defaults (configure_spilo.py); Zalando's operator
		// sets both.
		s.roleLabel, s.scopeLabel = "spilo-role", "version"
		if v := lit("KUBERNETES_ROLE_LABEL"); v != "" {
			s.roleLabel = v
		}
		if v := lit("KUBERNETES_SCOPE_LABEL"); v != "" {
			s.scopeLabel = v
		}
		s.dcs, s.dcsFrom = model.DCSEndpoints, "Spilo without KUBERNETES_USE_CONFIGMAPS"
		if lit("KUBERNETES_USE_CONFIGMAPS") != "" {
			s.dcs, s.dcsFrom = model.DCSConfigMaps, "Spilo's KUBERNETES_USE_CONFIGMAPS"
		}
		if referenced(c, "KUBERNETES_USE_CONFIGMAPS") {
			// Set from a ConfigMap or Secret hactl does not read: the
			// records decide.
			s.dcs, s.dcsFrom = "", ""
		}
	}
	if scope := t.Labels[pgoScopeLabel]; scope != "" && t.Labels[pgoClusterLabel] != "" {
		// Crunchy PGO writes Patroni's settings to a file
		// (internal/patroni/config.go): scope <cluster>-ha, its own
		// scope and role labels, always on Endpoints; its pod template
		// carries the scope label.
		s.scope, s.scopeLabel, s.roleLabel = scope, pgoScopeLabel, pgoRoleLabel
		s.dcs, s.dcsFrom = model.DCSEndpoints, "Crunchy PGO (use_endpoints in the patroni.yaml it writes)"
	}
	if v := lit("PATRONI_SCOPE"); v != "" {
		s.scope = v
	}
	if v := lit("PATRONI_KUBERNETES_SCOPE_LABEL"); v != "" {
		s.scopeLabel = v
	}
	if v := lit("PATRONI_KUBERNETES_ROLE_LABEL"); v != "" {
		s.roleLabel = v
	}
	if v := lit("PATRONI_KUBERNETES_USE_ENDPOINTS"); v != "" {
		s.dcs, s.dcsFrom = model.DCSConfigMaps, "PATRONI_KUBERNETES_USE_ENDPOINTS"
		if truthy(v) {
			s.dcs = model.DCSEndpoints
		}
	}
	if referenced(c, "PATRONI_KUBERNETES_USE_ENDPOINTS") {
		s.dcs, s.dcsFrom = "", ""
	}
	if s.scope == "" {
		s.scope = t.Labels[s.scopeLabel]
	}
	if s.scope == "" {
		s.scope = name
	}
	return s
}

// singular is the kind of one DCS object ("ConfigMap", "Endpoints").
func singular(kind string) string {
	if kind == model.DCSConfigMaps {
		return "ConfigMap"
	}
	return kind
}

// referenced reports whether c sets name from a reference (a ConfigMap,
// a Secret, a field): its value is not in the template.
func referenced(c *model.Container, name string) bool {
	if c == nil {
		return false
	}
	for _, e := range c.Env {
		if e.Name == name && e.Ref != "" {
			return true
		}
	}
	return false
}

// leaderRecord is a leader object's annotations as one kind of DCS
// object holds them: ok when the object exists and carries a leader
// record (a Service's own Endpoints share the name and carry none).
type leaderRecord struct {
	kind, name string
	a          map[string]string
	ok         bool
}

func (r leaderRecord) renewed() time.Time { return parseTime(r.a["renewTime"]) }

// leaderRecords are the leader objects of scope under both kinds: the
// ConfigMap <scope>-leader and the Endpoints <scope>.
func leaderRecords(objs model.APIObjects, scope string) (cm, ep leaderRecord) {
	cm = leaderRecord{kind: model.DCSConfigMaps, name: scope + "-leader"}
	ep = leaderRecord{kind: model.DCSEndpoints, name: scope}
	if objs.Err() == nil {
		cm.a, cm.ok = objs.ConfigMap(cm.name)
	}
	if objs.EndpointsErr() == nil {
		ep.a, ep.ok = objs.Endpoints(ep.name)
		_, leader := ep.a["leader"]
		_, renew := ep.a["renewTime"]
		ep.ok = ep.ok && (leader || renew)
	}
	return cm, ep
}

// decodeCluster reads the Patroni objects of cluster name, whose pod
// template is t and its facts (decoded by Template) tf: from the kind of
// DCS object the template names, else the kind whose leader record was
// renewed last (Patroni's default, ConfigMaps, when neither holds one). A
// leader record of the other kind is reported as orphaned, never read.
func decodeCluster(t model.PodTemplate, objs model.APIObjects, name string, tf model.TemplateFacts) *model.PatroniClusterFacts {
	s := templateSettings(t, t.Container(tf.Container), name)
	f := &model.PatroniClusterFacts{Scope: s.scope, ScopeLabel: s.scopeLabel, RoleLabel: s.roleLabel, RESTPort: tf.ClientPort, DCS: s.dcs, DCSFrom: s.dcsFrom}
	cm, ep := leaderRecords(objs, f.Scope)
	if f.DCS == "" {
		switch {
		case objs.Err() != nil:
			// The ConfigMaps, Patroni's default and where an upgrade
			// leaves the Endpoints' successor, are unread: an Endpoints
			// record alone may be the orphan.
			f.ObjectsErr = objs.Err().Error()
			return f
		case cm.ok && (!ep.ok || !ep.renewed().After(cm.renewed())):
			f.DCS, f.DCSFrom = model.DCSConfigMaps, "where its leader record is"
		case ep.ok:
			f.DCS, f.DCSFrom = model.DCSEndpoints, "where its leader record is"
		case objs.EndpointsErr() != nil:
			// No ConfigMap record, and the Endpoints are unread.
			f.ObjectsErr = objs.EndpointsErr().Error()
			return f
		default:
			f.DCS, f.DCSFrom = model.DCSConfigMaps, "Patroni's default"
		}
	}
	get, err, lock, other := objs.ConfigMap, objs.Err(), cm, ep
	if f.DCS == model.DCSEndpoints {
		get, err, lock, other = objs.Endpoints, objs.EndpointsErr(), ep, cm
	}
	if err != nil {
		f.ObjectsErr = err.Error()
		return f
	}
	if other.ok && !lock.renewed().IsZero() && other.renewed().After(lock.renewed()) {
		// The record Patroni should no longer write was renewed after
		// the one it should: which one it writes is not known.
		f.ObjectsErr = fmt.Sprintf("two leader records: %s %s (%s, renewed %s) and %s %s (%s, renewed %s), the first renewed later although the template puts the DCS on %s (%s)",
			other.kind, other.name, format.Dash(other.a["leader"]), other.a["renewTime"], lock.kind, lock.name, format.Dash(lock.a["leader"]), lock.a["renewTime"], f.DCS, f.DCSFrom)
		return f
	}
	if other.ok {
		f.Orphaned = fmt.Sprintf("%s %s holds a leader record (%s, renewed %s) that this cluster no longer writes (its DCS is on %s): left from an earlier DCS mode, not read",
			singular(other.kind), other.name, format.Dash(other.a["leader"]), format.Dash(other.a["renewTime"]), f.DCS)
	}
	// On Endpoints, the object <scope> may be a Service's own, with no
	// leader record: not the lock.
	if a, ok := get(lock.name); ok && (f.DCS == model.DCSConfigMaps || lock.ok) {
		f.LockFound = true
		f.LockHolder = a["leader"]
		f.LockRenew = parseTime(a["renewTime"])
		if n, err := strconv.Atoi(a["ttl"]); err == nil {
			f.LockTTL = time.Duration(n) * time.Second
		}
		f.LockTransitions, _ = strconv.Atoi(a["transitions"])
		f.LockAcquired = parseTime(a["acquireTime"])
	}
	if a, ok := get(f.Scope + "-config"); ok {
		f.ConfigFound = true
		f.Initialize = a["initialize"]
		f.History = parseHistory(a["history"])
		var cfg struct {
			TTL                  json.Number `json:"ttl"`
			MaximumLagOnFailover json.Number `json:"maximum_lag_on_failover"`
			SynchronousMode      any         `json:"synchronous_mode"`
			SynchronousStrict    any         `json:"synchronous_mode_strict"`
			Pause                any         `json:"pause"`
		}
		if err := json.Unmarshal([]byte(a["config"]), &cfg); err == nil {
			f.MaximumLagOnFailover, _ = cfg.MaximumLagOnFailover.Int64()
			f.SynchronousMode = configTruthy(cfg.SynchronousMode)
			f.SynchronousModeStrict = f.SynchronousMode && configTruthy(cfg.SynchronousStrict)
			f.Paused = configTruthy(cfg.Pause)
			if f.LockTTL == 0 {
				if n, err := cfg.TTL.Int64(); err == nil {
					f.LockTTL = time.Duration(n) * time.Second
				}
			}
		}
	}
	if a, ok := get(f.Scope + "-sync"); ok {
		f.SyncStandby = a["sync_standby"]
	}
	if a, ok := get(f.Scope + "-failover"); ok {
		f.FailoverPending = a["leader"] != "" || a["member"] != "" || a["scheduled_at"] != ""
	}
	return f
}

// parseHistory reads the DCS's timeline history: a JSON list of
// [timeline, lsn, reason, time, new leader] (the last two since Patroni
// 2.x; older entries have three). An entry that does not read is left
// out.
func parseHistory(v string) []model.TimelineSwitch {
	var entries []json.RawMessage
	if v == "" || json.Unmarshal([]byte(v), &entries) != nil {
		return nil
	}
	var out []model.TimelineSwitch
	for _, raw := range entries {
		var e []any
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.UseNumber() // positions past 2^53 stay exact
		if d.Decode(&e) != nil || len(e) < 2 {
			continue
		}
		tlN, ok1 := e[0].(json.Number)
		lsnN, ok2 := e[1].(json.Number)
		if !ok1 || !ok2 {
			continue
		}
		tl, err1 := strconv.Atoi(tlN.String())
		lsn, err2 := strconv.ParseUint(lsnN.String(), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		s := model.TimelineSwitch{Timeline: tl, LSN: lsn}
		if len(e) > 2 {
			s.Reason, _ = e[2].(string)
		}
		if len(e) > 3 {
			at, _ := e[3].(string)
			s.At = parseTime(at)
		}
		if len(e) > 4 {
			s.NewLeader, _ = e[4].(string)
		}
		out = append(out, s)
	}
	return out
}

// configTruthy reads the dynamic configuration's loose booleans (true,
// "true", "on", 1; synchronous_mode's "quorum" counts as on).
func configTruthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		switch strings.ToLower(x) {
		case "true", "on", "yes", "1", "quorum":
			return true
		}
	case float64:
		return x != 0
	}
	return false
}

// parseTime parses the lock's times ("2026-12-01T19:04:02.063774+00:00").
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	return time.Time{}
}
