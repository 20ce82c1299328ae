package patroni

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// objects are ConfigMap annotations by name, or an error reading them.
type objects struct {
	cms map[string]map[string]string
	err error
}

func (o objects) ConfigMap(name string) (map[string]string, bool) {
	a, ok := o.cms[name]
	return a, ok
}

func (o objects) Err() error { return o.err }

// Keep reads the DCS under the scope the pods' cluster-name label names,
// says which label carries the role, and says why when the ConfigMaps
// could not be read.
func TestKeepReadsTheDCS(t *testing.T) {
	tpl := model.PodTemplate{Labels: map[string]string{"cluster-name": "main"},
		Containers: []model.Container{{Name: "patroni", Env: []model.EnvVar{{Name: "PATRONI_KUBERNETES_ROLE_LABEL", Value: "spilo-role"}}}}}
	objs := objects{cms: map[string]map[string]string{
		"main-leader": {"leader": "main-1", "ttl": "30", "renewTime": "2026-12-01T19:04:02.063774+00:00"},
		"main-config": {"initialize": "7311", "config": `{"synchronous_mode": "quorum", "maximum_lag_on_failover": 2048}`},
		"pg-leader":   {"leader": "pg-0"},
	}}
	c := model.ClusterFacts{Name: "pg", Template: Engine{}.Template(tpl)}
	kept := Engine{}.Keep(tpl, objs, &c)
	p := c.Patroni
	switch {
	case p == nil:
		t.Fatal("no Patroni facts")
	case p.Scope != "main" || p.LockHolder != "main-1" || p.LockTTL != 30*time.Second || p.Initialize != "7311":
		t.Errorf("scope %q, holder %q, ttl %s, initialize %q", p.Scope, p.LockHolder, p.LockTTL, p.Initialize)
	case !p.SynchronousMode || p.MaximumLagOnFailover != 2048 || p.RESTPort != RESTPort:
		t.Errorf("synchronous %v, maximum lag %d, REST port %d", p.SynchronousMode, p.MaximumLagOnFailover, p.RESTPort)
	case kept.RoleLabel != "spilo-role" || c.Shape != model.ShapeSelfRegistering:
		t.Errorf("role label %q, shape %s", kept.RoleLabel, c.Shape)
	case c.SelfWritten == nil || !slices.Equal(c.SelfWritten.Labels, []string{"spilo-role"}) || !slices.Equal(c.SelfWritten.Annotations, []string{"status"}):
		// What Patroni rewrites on its pods stays out of their fences.
		t.Errorf("self-written %+v, want the role label spilo-role and the status annotation", c.SelfWritten)
	case c.Record == nil || c.Record.Holder != "main-1" || !c.Record.HolderExpires.Equal(p.LockRenew.Add(30*time.Second)):
		t.Errorf("record %+v, want main-1 holding the lock until its renewal plus ttl", c.Record)
	}
	c = model.ClusterFacts{Name: "pg", Template: model.TemplateFacts{OperatorOwner: "postgresql/pg"}}
	Engine{}.Keep(tpl, objects{err: errors.New("forbidden")}, &c)
	if c.Patroni.ObjectsErr != "forbidden" || c.Patroni.LockFound || c.Shape != model.ShapeOperatorOwned {
		t.Errorf("unread ConfigMaps: %+v, shape %s", c.Patroni, c.Shape)
	}
}
