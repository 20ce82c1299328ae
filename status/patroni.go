package status

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// This file decodes what the API server holds for a Patroni cluster using
// Patroni's Kubernetes DCS (use_endpoints: false): the ConfigMaps
// <scope>-leader (the leader lock), <scope>-config (the dynamic
// configuration and the cluster's system identifier), <scope>-sync and
// <scope>-failover, the pods' role label, and the primary's Service.

// decodePatroniCluster reads the Patroni objects of sts's cluster, whose
// template's facts (decoded by Patroni's decoder) are tf.
func decodePatroniCluster(sts *appsv1.StatefulSet, ix *index, tf model.TemplateFacts) *model.PatroniClusterFacts {
	f := &model.PatroniClusterFacts{Scope: sts.Name, RoleLabel: "role", RESTPort: tf.ClientPort}
	if v := sts.Spec.Template.Labels["cluster-name"]; v != "" {
		f.Scope = v
	}
	if c := podTemplate(sts).Container(tf.Container); c != nil {
		if v, ok := c.Literal("PATRONI_SCOPE"); ok && v != "" {
			f.Scope = v
		}
		if v, ok := c.Literal("PATRONI_KUBERNETES_ROLE_LABEL"); ok && v != "" {
			f.RoleLabel = v
		}
	}
	if ix.configMapsErr != nil {
		f.ObjectsErr = ix.configMapsErr.Error()
		return f
	}
	ns := sts.Namespace
	if cm, ok := ix.configMaps[ns+"/"+f.Scope+"-leader"]; ok {
		a := cm.Annotations
		f.LockFound = true
		f.LockHolder = a["leader"]
		f.LockRenew = parsePatroniTime(a["renewTime"])
		if n, err := strconv.Atoi(a["ttl"]); err == nil {
			f.LockTTL = time.Duration(n) * time.Second
		}
		f.LockTransitions, _ = strconv.Atoi(a["transitions"])
		f.LockAcquired = parsePatroniTime(a["acquireTime"])
	}
	if cm, ok := ix.configMaps[ns+"/"+f.Scope+"-config"]; ok {
		f.ConfigFound = true
		f.Initialize = cm.Annotations["initialize"]
		f.History = parseHistory(cm.Annotations["history"])
		var cfg struct {
			TTL                  json.Number `json:"ttl"`
			MaximumLagOnFailover json.Number `json:"maximum_lag_on_failover"`
			SynchronousMode      any         `json:"synchronous_mode"`
			SynchronousStrict    any         `json:"synchronous_mode_strict"`
			Pause                any         `json:"pause"`
		}
		if err := json.Unmarshal([]byte(cm.Annotations["config"]), &cfg); err == nil {
			f.MaximumLagOnFailover, _ = cfg.MaximumLagOnFailover.Int64()
			f.SynchronousMode = truthy(cfg.SynchronousMode)
			f.SynchronousModeStrict = f.SynchronousMode && truthy(cfg.SynchronousStrict)
			f.Paused = truthy(cfg.Pause)
			if f.LockTTL == 0 {
				if n, err := cfg.TTL.Int64(); err == nil {
					f.LockTTL = time.Duration(n) * time.Second
				}
			}
		}
	}
	if cm, ok := ix.configMaps[ns+"/"+f.Scope+"-sync"]; ok {
		f.SyncStandby = cm.Annotations["sync_standby"]
	}
	if cm, ok := ix.configMaps[ns+"/"+f.Scope+"-failover"]; ok {
		a := cm.Annotations
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
			s.At = parsePatroniTime(at)
		}
		if len(e) > 4 {
			s.NewLeader, _ = e[4].(string)
		}
		out = append(out, s)
	}
	return out
}

// truthy reads Patroni's loose booleans (true, "true", "on", 1).
func truthy(v any) bool {
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

// parsePatroniTime parses the lock's times ("2026-12-01T19:04:02.063774+00:00").
func parsePatroniTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	return time.Time{}
}

// patroniRoleLabels fills each member pod's role label.
func patroniRoleLabels(obs *model.Observation, ix *index) {
	for i := range obs.Members {
		m := &obs.Members[i]
		if m.Pod == nil {
			continue
		}
		if p, ok := ix.podByName[obs.Cluster.Namespace+"/"+m.Pod.Name]; ok {
			m.Pod.RoleLabel = p.Labels[obs.Cluster.Patroni.RoleLabel]
		}
	}
}

// patroniPrimaryEndpoints finds the primary's Service: a Service whose
// selector picks the cluster's pods labelled with the primary role
// (master or primary); its ready endpoints name the pods behind it.
func patroniPrimaryEndpoints(sts *appsv1.StatefulSet, ix *index, roleLabel string) *model.EndpointFacts {
	podLabels := labels.Set{}
	for k, v := range sts.Spec.Template.Labels {
		podLabels[k] = v
	}
	for _, s := range ix.svcs[sts.Namespace] {
		svc := s.svc
		role := svc.Spec.Selector[roleLabel]
		if role != "master" && role != "primary" {
			continue
		}
		podLabels[roleLabel] = role
		if !s.sel.Matches(podLabels) {
			continue
		}
		return serviceEndpoints(svc, ix)
	}
	return nil
}

// patroniStatus is Patroni's part of status: the leader lock and configuration it keeps
// in ConfigMaps, the primary's endpoints, Patroni's own roles in the
// document, and the member table's PostgreSQL columns.
type patroniStatus struct{}

func (patroniStatus) decode(sts *appsv1.StatefulSet, ix *index, obs *model.Observation) {
	// A Patroni member on an empty volume bootstraps itself from the
	// leader (or initialises the cluster): it registers on its own.
	obs.Cluster.Shape = model.ShapeSelfRegistering
	if obs.Cluster.Template.OperatorOwner != "" {
		obs.Cluster.Shape = model.ShapeOperatorOwned
	}
	obs.Cluster.Patroni = decodePatroniCluster(sts, ix, obs.Cluster.Template)
	patroniRoleLabels(obs, ix)
	obs.ClientEndpoints = patroniPrimaryEndpoints(sts, ix, obs.Cluster.Patroni.RoleLabel)
}

func (patroniStatus) configMaps() bool { return true }

func (patroniStatus) member(ms *MemberStatus, e *model.EngineFacts) {
	if e.Patroni != nil {
		ms.Patroni = e.Patroni
		ms.Role = e.Patroni.RoleName()
	}
}

func (patroniStatus) columns(o TableOptions) []string { return patroniColumns(o) }

func (patroniStatus) row(m MemberStatus, o TableOptions) []string { return patroniRow(m, o) }

// patroniColumns are a Patroni cluster's member columns: the role and
// state each member's PostgreSQL reported, its timeline, and its lag in
// bytes of WAL behind the primary (with -o wide, its WAL positions).
func patroniColumns(o TableOptions) []string {
	cols := []string{"ORD", "POD", "NODE", "ROLE", "STATE", "TL", "PHASE", "READY", "LAG", "VERSION", "RESTARTS", "AGE", "REASONS"}
	if o.Wide {
		cols = append(cols, "PVC", "SYSTEM ID", "WAL", "RECEIVED", "REPLAYED", "PROBE")
	}
	return cols
}

func patroniRow(m MemberStatus, o TableOptions) []string {
	p := m.Patroni
	if p == nil {
		p = &model.PatroniFacts{}
	}
	row := []string{
		strconv.Itoa(m.Ordinal), format.Dash(m.Pod), format.Dash(m.Node), m.Role, format.Dash(p.State), num(uint64(max(p.Timeline, 0))), m.Phase,
		strconv.FormatBool(m.Ready), format.WALLag(m.Lag), format.Dash(m.Version), strconv.Itoa(m.Restarts),
		format.Age(ptrTime(m.CreatedAt), o.Now), format.Dash(strings.Join(m.Reasons, ",")),
	}
	if !o.Wide {
		return row
	}
	pos := func(l *int64) string {
		if l == nil {
			return "-"
		}
		return strconv.FormatInt(*l, 10)
	}
	return append(row, pvcCell(m), format.Dash(m.ClusterID), pos(p.WALLocation), pos(p.ReceivedLocation), pos(p.ReplayedLocation), probeCell(m))
}
