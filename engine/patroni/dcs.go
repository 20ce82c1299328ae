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
// Patroni's Kubernetes DCS (use_endpoints: false): the ConfigMaps
// <scope>-leader (the leader lock), <scope>-config (the dynamic
// configuration and the cluster's system identifier), <scope>-sync and
// <scope>-failover, and which pod label carries each member's role.

var _ engine.Keeper = Engine{}

// Keep implements engine.Keeper: the scope is the pods' cluster-name
// label, PATRONI_SCOPE or the workload's name; the role label
// PATRONI_KUBERNETES_ROLE_LABEL or "role", whose values master and
// primary mean the primary.
func (Engine) Keep(t model.PodTemplate, objs model.APIObjects, c *model.ClusterFacts) model.Kept {
	// A Patroni member on an empty volume bootstraps itself from the
	// leader (or initialises the cluster): it registers on its own.
	c.Shape = model.ShapeSelfRegistering
	if c.Template.OperatorOwner != "" {
		c.Shape = model.ShapeOperatorOwned
	}
	c.Patroni = decodeCluster(t, objs, c.Name, c.Template)
	c.SelfWritten = &model.SelfWritten{Labels: []string{c.Patroni.RoleLabel}, Annotations: []string{StatusAnnotation}}
	c.Record = Record(c.Patroni)
	return model.Kept{RoleLabel: c.Patroni.RoleLabel, PrimaryRoles: []string{"master", "primary"}}
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
			Detail: fmt.Sprintf("%s took the leader lock (%s-leader; %d transitions so far)", format.Dash(p.LockHolder), p.Scope, p.LockTransitions)})
	}
	if p.LockFound && p.LockHolder != "" {
		r.Holder = p.LockHolder
		if !p.LockRenew.IsZero() && p.LockTTL > 0 {
			r.HolderExpires = p.LockRenew.Add(p.LockTTL)
		}
	}
	return r
}

// decodeCluster reads the Patroni objects of cluster name, whose pod
// template is t and its facts (decoded by Template) tf.
func decodeCluster(t model.PodTemplate, objs model.APIObjects, name string, tf model.TemplateFacts) *model.PatroniClusterFacts {
	f := &model.PatroniClusterFacts{Scope: name, RoleLabel: "role", RESTPort: tf.ClientPort}
	if v := t.Labels["cluster-name"]; v != "" {
		f.Scope = v
	}
	if c := t.Container(tf.Container); c != nil {
		if v, ok := c.Literal("PATRONI_SCOPE"); ok && v != "" {
			f.Scope = v
		}
		if v, ok := c.Literal("PATRONI_KUBERNETES_ROLE_LABEL"); ok && v != "" {
			f.RoleLabel = v
		}
	}
	if err := objs.Err(); err != nil {
		f.ObjectsErr = err.Error()
		return f
	}
	if a, ok := objs.ConfigMap(f.Scope + "-leader"); ok {
		f.LockFound = true
		f.LockHolder = a["leader"]
		f.LockRenew = parseTime(a["renewTime"])
		if n, err := strconv.Atoi(a["ttl"]); err == nil {
			f.LockTTL = time.Duration(n) * time.Second
		}
		f.LockTransitions, _ = strconv.Atoi(a["transitions"])
		f.LockAcquired = parseTime(a["acquireTime"])
	}
	if a, ok := objs.ConfigMap(f.Scope + "-config"); ok {
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
	if a, ok := objs.ConfigMap(f.Scope + "-sync"); ok {
		f.SyncStandby = a["sync_standby"]
	}
	if a, ok := objs.ConfigMap(f.Scope + "-failover"); ok {
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
