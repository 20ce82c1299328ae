package patroni

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// objects are ConfigMap and Endpoints annotations by name, or an error
// reading each kind.
type objects struct {
	cms   map[string]map[string]string
	err   error
	eps   map[string]map[string]string
	epErr error
}

func (o objects) ConfigMap(name string) (map[string]string, bool) {
	a, ok := o.cms[name]
	return a, ok
}

func (o objects) Err() error { return o.err }

func (o objects) Endpoints(name string) (map[string]string, bool) {
	a, ok := o.eps[name]
	return a, ok
}

func (o objects) EndpointsErr() error { return o.epErr }

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

// Keep reads the DCS kind the template names (Patroni's variable before
// Spilo's), else the kind whose leader record was renewed last, else
// Patroni's default; a leader record of the other kind is reported as
// orphaned and never read, and a Service's own Endpoints (no leader
// record) are not taken for one.
func TestKeepFindsTheDCSKind(t *testing.T) {
	const old, fresh = "2026-12-01T16:00:00+00:00", "2026-12-01T19:04:02+00:00"
	spiloEnv := []model.EnvVar{{Name: "DCS_ENABLE_KUBERNETES_API", Value: "true"}, {Name: "SCOPE", Value: "acid"}}
	cmLock := map[string]map[string]string{"acid-leader": {"leader": "acid-0", "renewTime": fresh}, "acid-config": {"initialize": "1"}}
	epLock := map[string]map[string]string{"acid": {"leader": "acid-1", "renewTime": fresh}, "acid-config": {"initialize": "2"}}
	oldEp := map[string]map[string]string{"acid": {"leader": "acid-2", "renewTime": old}, "acid-config": {"config": `{"pause": true}`}}
	for _, c := range []struct {
		name                 string
		env                  []model.EnvVar
		objs                 objects
		dcs, from, holder    string
		orphaned, objectsErr bool
	}{
		{"Spilo on ConfigMaps, with an upgrade's Endpoints", append(spiloEnv, model.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Value: "true"}),
			objects{cms: cmLock, eps: oldEp}, model.DCSConfigMaps, "Spilo's KUBERNETES_USE_CONFIGMAPS", "acid-0", true, false},
		{"Spilo on Endpoints", spiloEnv, objects{eps: epLock}, model.DCSEndpoints, "Spilo without KUBERNETES_USE_CONFIGMAPS", "acid-1", false, false},
		{"Patroni's variable over Spilo's", append(spiloEnv, model.EnvVar{Name: "PATRONI_KUBERNETES_USE_ENDPOINTS", Value: "true"}, model.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Value: "true"}),
			objects{eps: epLock}, model.DCSEndpoints, "PATRONI_KUBERNETES_USE_ENDPOINTS", "acid-1", false, false},
		{"undecided: the newer record", []model.EnvVar{{Name: "PATRONI_SCOPE", Value: "acid"}},
			objects{cms: map[string]map[string]string{"acid-leader": {"leader": "acid-0", "renewTime": old}}, eps: epLock}, model.DCSEndpoints, "where its leader record is", "acid-1", true, false},
		{"undecided: a Service's own Endpoints are no record", []model.EnvVar{{Name: "PATRONI_SCOPE", Value: "acid"}},
			objects{cms: cmLock, eps: map[string]map[string]string{"acid": nil}}, model.DCSConfigMaps, "where its leader record is", "acid-0", false, false},
		{"undecided, nothing: Patroni's default", []model.EnvVar{{Name: "PATRONI_SCOPE", Value: "acid"}},
			objects{}, model.DCSConfigMaps, "Patroni's default", "", false, false},
		{"Endpoints unreadable on Endpoints mode", spiloEnv, objects{cms: cmLock, epErr: errors.New("endpoints forbidden")}, model.DCSEndpoints, "Spilo without KUBERNETES_USE_CONFIGMAPS", "", false, true},
		{"Endpoints unreadable on ConfigMaps mode: read as before", append(spiloEnv, model.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Value: "1"}),
			objects{cms: cmLock, epErr: errors.New("endpoints forbidden")}, model.DCSConfigMaps, "Spilo's KUBERNETES_USE_CONFIGMAPS", "acid-0", false, false},
		{"on Endpoints, a Service's own Endpoints are no lock", spiloEnv,
			objects{eps: map[string]map[string]string{"acid": nil}}, model.DCSEndpoints, "Spilo without KUBERNETES_USE_CONFIGMAPS", "", false, false},
		{"Spilo's variable by reference: the records decide", append(spiloEnv, model.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Ref: "other"}),
			objects{cms: cmLock, eps: oldEp}, model.DCSConfigMaps, "where its leader record is", "acid-0", true, false},
		{"undecided, ConfigMaps unreadable: an Endpoints record may be the orphan", []model.EnvVar{{Name: "PATRONI_SCOPE", Value: "acid"}},
			objects{err: errors.New("configmaps forbidden"), eps: oldEp}, "", "", "", false, true},
		{"undecided, no ConfigMap record, Endpoints unreadable", []model.EnvVar{{Name: "PATRONI_SCOPE", Value: "acid"}},
			objects{epErr: errors.New("endpoints forbidden")}, "", "", "", false, true},
		{"the record of the other kind renewed later: unknown", append(spiloEnv, model.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Value: "true"}),
			objects{cms: map[string]map[string]string{"acid-leader": {"leader": "acid-0", "renewTime": old}}, eps: epLock}, model.DCSConfigMaps, "Spilo's KUBERNETES_USE_CONFIGMAPS", "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tpl := model.PodTemplate{Containers: []model.Container{{Name: "postgres", Image: "ghcr.io/zalando/spilo-15:3.0-p1", Env: c.env}}}
			// Undecided templates name no Kubernetes DCS: such clusters
			// are found by hactl's label alone.
			if want := !strings.HasPrefix(c.name, "undecided"); (Engine{}).Recognises(tpl) != want {
				t.Errorf("recognised %v, want %v", !want, want)
			}
			cf := model.ClusterFacts{Name: "acid", Template: Engine{}.Template(tpl)}
			Engine{}.Keep(tpl, c.objs, &cf)
			p := cf.Patroni
			if p.DCS != c.dcs || p.DCSFrom != c.from || p.LockHolder != c.holder || (p.Orphaned != "") != c.orphaned || (p.ObjectsErr != "") != c.objectsErr {
				t.Errorf("DCS %q from %q, holder %q, orphaned %q, error %q", p.DCS, p.DCSFrom, p.LockHolder, p.Orphaned, p.ObjectsErr)
			}
			if p.LockFound && (c.holder == "" || p.ObjectsErr != "") {
				t.Errorf("a lock found: %+v", p)
			}
			if p.Paused {
				t.Error("the orphaned configuration was read")
			}
		})
	}
}

// Recognises finds Patroni on the Kubernetes DCS without hactl's label,
// and nothing else: not Patroni on another DCS, not a plain PostgreSQL.
func TestRecognisesPatroniOnKubernetes(t *testing.T) {
	for _, c := range []struct {
		name string
		c    model.Container
		want bool
	}{
		{"Patroni's example", model.Container{Name: "patroni", Env: []model.EnvVar{{Name: "PATRONI_KUBERNETES_LABELS", Value: "{}"}}}, true},
		{"Crunchy PGO", model.Container{Name: "database", Command: []string{"patroni", "/etc/patroni"}, Env: []model.EnvVar{{Name: "PATRONI_KUBERNETES_POD_IP", Ref: "status.podIP"}}}, true},
		{"Zalando's Spilo", model.Container{Name: "postgres", Image: "ghcr.io/zalando/spilo-16:4.0-p2", Env: []model.EnvVar{{Name: "DCS_ENABLE_KUBERNETES_API", Value: "true"}}}, true},
		{"Spilo on etcd", model.Container{Name: "postgres", Image: "ghcr.io/zalando/spilo-16:4.0-p2", Env: []model.EnvVar{{Name: "ETCD_HOST", Value: "etcd:2379"}}}, false},
		{"Patroni on etcd", model.Container{Name: "patroni", Env: []model.EnvVar{{Name: "PATRONI_ETCD3_HOSTS", Value: "etcd:2379"}}}, false},
		{"plain PostgreSQL", model.Container{Name: "postgres", Image: "postgres:15", Env: []model.EnvVar{{Name: "POSTGRES_PASSWORD", Ref: "secret"}}}, false},
	} {
		if got := (Engine{}).Recognises(model.PodTemplate{Containers: []model.Container{c.c}}); got != c.want {
			t.Errorf("%s: recognised %v, want %v", c.name, got, c.want)
		}
	}
}

// A Spilo StatefulSet as Zalando's operator makes it (SPILO_CONFIGURATION,
// no owner reference by default) is the postgresql's: operator-owned,
// so replace is refused and the operator's way named.
func TestZalandoIsOperatorOwned(t *testing.T) {
	tpl := model.PodTemplate{Containers: []model.Container{{Name: "postgres", Image: "ghcr.io/zalando/spilo-15:3.0-p1",
		Env: []model.EnvVar{{Name: "DCS_ENABLE_KUBERNETES_API", Value: "true"}, {Name: "SPILO_CONFIGURATION", Value: "{}"}}}}}
	c := model.ClusterFacts{Name: "acid-main", Template: Engine{}.Template(tpl)}
	Engine{}.Keep(tpl, objects{}, &c)
	if c.Shape != model.ShapeOperatorOwned || c.Template.OperatorOwner != "postgresql/acid-main" {
		t.Errorf("shape %s, owner %q", c.Shape, c.Template.OperatorOwner)
	}
	tpl.Containers[0].Env = tpl.Containers[0].Env[:1]
	c = model.ClusterFacts{Name: "acid-main", Template: Engine{}.Template(tpl)}
	Engine{}.Keep(tpl, objects{}, &c)
	if c.Shape != model.ShapeSelfRegistering {
		t.Errorf("Spilo without the operator's configuration: shape %s", c.Shape)
	}
}

// A Crunchy PGO instance's template names its Patroni settings by its
// labels (PGO writes them to a file): scope <cluster>-ha on Endpoints,
// PGO's scope and role labels; the cluster is its PostgresCluster's, so
// replace is refused naming PGO's way, and the Endpoints <cluster>-ha is
// both the leader lock and the primary's Service.
func TestPGOSettings(t *testing.T) {
	tpl := model.PodTemplate{Owner: "PostgresCluster/hippo", Labels: map[string]string{
		pgoClusterLabel: "hippo", pgoScopeLabel: "hippo-ha", "postgres-operator.crunchydata.com/instance": "hippo-instance1-a9kq"},
		Containers: []model.Container{{Name: "database", Command: []string{"sh", "-c", "--", `exec "$@"`, "--", "patroni", "/etc/patroni"},
			Env: []model.EnvVar{{Name: "PATRONI_KUBERNETES_POD_IP", Ref: "status.podIP"}, {Name: "PATRONI_RESTAPI_LISTEN", Value: "*:8008"},
				{Name: "PATRONI_POSTGRESQL_DATA_DIR", Value: "/pgdata/pg15"}}}}}
	if !(Engine{}).Recognises(tpl) {
		t.Fatal("PGO's template not recognised")
	}
	tf := Engine{}.Template(tpl)
	tf.OperatorOwner = tpl.Owner
	if tf.Container != "database" || tf.ClientPort != 8008 || tf.DataDir != "/pgdata/pg15" {
		t.Errorf("template %+v", tf)
	}
	c := model.ClusterFacts{Name: "hippo", Template: tf}
	objs := objects{eps: map[string]map[string]string{"hippo-ha": {"leader": "hippo-instance1-a9kq-0", "renewTime": "2026-12-07T19:04:02+00:00", "ttl": "30"}}}
	kept := Engine{}.Keep(tpl, objs, &c)
	p := c.Patroni
	if p.Scope != "hippo-ha" || p.ScopeLabel != pgoScopeLabel || p.RoleLabel != pgoRoleLabel || p.DCS != model.DCSEndpoints ||
		!strings.Contains(p.DCSFrom, "Crunchy PGO") || p.LockHolder != "hippo-instance1-a9kq-0" {
		t.Errorf("facts %+v", p)
	}
	if kept.RoleLabel != pgoRoleLabel || kept.PrimaryService != "hippo-ha" || c.Shape != model.ShapeOperatorOwned {
		t.Errorf("kept %+v, shape %s", kept, c.Shape)
	}
	if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "leader lock Endpoints hippo-ha") {
		t.Errorf("notes %q", c.Notes)
	}
}
