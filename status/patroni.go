package status

import (
	"encoding/json"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hactl-dev/hactl/model"
)

// This file decodes what the API server holds for a Patroni cluster using
// Patroni's Kubernetes DCS (use_endpoints: false): the ConfigMaps
// <scope>-leader (the leader lock), <scope>-config (the dynamic
// configuration and the cluster's system identifier), <scope>-sync and
// <scope>-failover, the pods' role label, and the primary's Service.

// PatroniRESTPort is Patroni's default REST API port.
const PatroniRESTPort = 8008

// patroniContainer finds the container running Patroni: one whose
// command or image names patroni or spilo, or that sets PATRONI_*
// variables.
func patroniContainer(sts *appsv1.StatefulSet) (*corev1.Container, bool) {
	cs := sts.Spec.Template.Spec.Containers
	for i := range cs {
		c := &cs[i]
		base := imageBase(c.Image)
		if c.Name == "patroni" || base == "patroni" || base == "spilo" || strings.HasPrefix(base, "spilo-") {
			return c, true
		}
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "patroni" {
			return c, true
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "PATRONI_") {
				return c, true
			}
		}
	}
	return nil, false
}

func imageBase(image string) string {
	repo := image
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	base := path.Base(repo)
	if i := strings.Index(base, ":"); i >= 0 {
		base = base[:i]
	}
	return base
}

// literalEnv is the literal value of the container's variable name ("",
// false when it is unset or comes from a reference).
func literalEnv(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

// decodePatroniTemplate is decodeTemplate for a Patroni StatefulSet: the
// container, its image, and the REST port members are dialled on.
func decodePatroniTemplate(sts *appsv1.StatefulSet) model.TemplateFacts {
	t := model.TemplateFacts{ClientPort: PatroniRESTPort}
	for _, o := range sts.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			t.OperatorOwner = o.Kind + "/" + o.Name
		}
	}
	c, ok := patroniContainer(sts)
	if !ok {
		return t
	}
	t.Container, t.Image = c.Name, c.Image
	if v, ok := literalEnv(c, "PATRONI_RESTAPI_LISTEN"); ok {
		if _, port, err := net.SplitHostPort(v); err == nil {
			if n, err := strconv.Atoi(port); err == nil && n > 0 {
				t.ClientPort = n
			}
		}
	}
	for _, p := range c.Ports {
		switch p.Name {
		case "patroni", "restapi", "api", "rest":
			t.ClientPort = int(p.ContainerPort)
		}
	}
	if v, ok := literalEnv(c, "PATRONI_POSTGRESQL_DATA_DIR"); ok {
		t.DataDir = v
	}
	return t
}

// decodePatroniCluster reads the Patroni objects of sts's cluster.
func decodePatroniCluster(sts *appsv1.StatefulSet, ix *index) *model.PatroniClusterFacts {
	f := &model.PatroniClusterFacts{Scope: sts.Name, RoleLabel: "role", RESTPort: PatroniRESTPort}
	if v := sts.Spec.Template.Labels["cluster-name"]; v != "" {
		f.Scope = v
	}
	if c, ok := patroniContainer(sts); ok {
		if v, ok := literalEnv(c, "PATRONI_SCOPE"); ok && v != "" {
			f.Scope = v
		}
		if v, ok := literalEnv(c, "PATRONI_KUBERNETES_ROLE_LABEL"); ok && v != "" {
			f.RoleLabel = v
		}
	}
	f.RESTPort = decodePatroniTemplate(sts).ClientPort
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
	}
	if cm, ok := ix.configMaps[ns+"/"+f.Scope+"-config"]; ok {
		f.ConfigFound = true
		f.Initialize = cm.Annotations["initialize"]
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
		ef := &model.EndpointFacts{Service: svc.Name}
		for _, sl := range ix.slices[svc.Namespace+"/"+svc.Name] {
			for _, ep := range sl.Endpoints {
				ef.Total++
				if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
					ef.Ready++
					if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
						ef.Pods = append(ef.Pods, ep.TargetRef.Name)
					}
				}
			}
		}
		return ef
	}
	return nil
}

// anyPatroni reports whether any StatefulSet is a Patroni cluster.
func anyPatroni(sts []appsv1.StatefulSet) bool {
	for i := range sts {
		if e, ok := DetectEngine(&sts[i]); ok && e == model.EnginePatroni {
			return true
		}
	}
	return false
}
