package scenario

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
)

func TestZalandoScenarios(t *testing.T) {
	// Every one has the operator's budget of the primary alone.
	want := map[string][]model.ReasonCode{
		"zalando":                      {model.ReasonPDBAllowsQuorumLoss},
		"zalando-endpoints":            {model.ReasonPDBAllowsQuorumLoss},
		"zalando-endpoints-lock-stale": {model.ReasonLeaderLockStale, model.ReasonMaintenancePaused, model.ReasonMemberUnreachable, model.ReasonPrimaryMissing, model.ReasonCRStatusStale, model.ReasonPDBAllowsQuorumLoss},
		"zalando-replica-lagging":      {model.ReasonReplicaLagging, model.ReasonPDBAllowsQuorumLoss},
	}
	for n, reasons := range want {
		s, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shape != ZalandoOperator || s.Shape.String() != "zalando-operator" {
			t.Errorf("%s: shape %v", n, s.Shape)
		}
		if s.ClusterName() != "acid-"+n {
			t.Errorf("%s: cluster %s", n, s.ClusterName())
		}
		if !s.Owns("acid-"+n+"-2") || s.Owns(n+"-2") || s.Owns("acid-"+n+"-x") {
			t.Errorf("%s: Owns", n)
		}
		if !slices.Equal(s.Reasons, reasons) {
			t.Errorf("%s: reasons %v, want %v", n, s.Reasons, reasons)
		}
		if slices.Contains(Demo, n) {
			t.Errorf("%s is in Demo", n)
		}
	}
	lockStale, _ := Get("pg-lock-stale")
	s, _ := Get("zalando-endpoints-lock-stale")
	// As pg-lock-stale, and the postgresql's Running is stale.
	if !slices.Equal(s.Reasons, append(slices.Clone(lockStale.Reasons), model.ReasonCRStatusStale, model.ReasonPDBAllowsQuorumLoss)) || !slices.Equal(s.MayAlso, lockStale.MayAlso) {
		t.Errorf("zalando-endpoints-lock-stale says %v/%v, pg-lock-stale %v/%v", s.Reasons, s.MayAlso, lockStale.Reasons, lockStale.MayAlso)
	}
}

// noHactl fails for any label or annotation key (or label value) of
// hactl's on meta.
func noHactl(t *testing.T, what string, meta metav1.ObjectMeta) {
	t.Helper()
	for k, v := range meta.Labels {
		if strings.Contains(k, "hactl") || strings.Contains(v, "hactl") {
			t.Errorf("%s: label %s=%s", what, k, v)
		}
	}
	for k := range meta.Annotations {
		if strings.Contains(k, "hactl") {
			t.Errorf("%s: annotation %s", what, k)
		}
	}
}

func zalandoTestParams(configMaps bool) ZalandoParams {
	return ZalandoParams{Name: "acid-x", Namespace: "ns", ConfigMaps: configMaps, PGVersion: "15", RunAsUser: 101, RunAsGroup: 104,
		SuperPassword: "su", StandbyPassword: "sb"}
}

func TestZalandoObjects(t *testing.T) {
	if _, err := ZalandoObjects(ZalandoParams{Name: "acid-x", Namespace: "ns", PGVersion: "15"}); err == nil {
		t.Error("rendered without a user and passwords")
	}
	for _, cms := range []bool{true, false} {
		o, err := ZalandoObjects(zalandoTestParams(cms))
		if err != nil {
			t.Fatal(err)
		}
		// Nothing of hactl's anywhere.
		var metas []metav1.ObjectMeta
		metas = append(metas, metav1.ObjectMeta{Labels: o.Postgresql.GetLabels(), Annotations: o.Postgresql.GetAnnotations()},
			o.ServiceAccount.ObjectMeta, o.ClusterRole.ObjectMeta, o.RoleBinding.ObjectMeta, o.StatefulSet.ObjectMeta,
			o.StatefulSet.Spec.Template.ObjectMeta, o.StatefulSet.Spec.VolumeClaimTemplates[0].ObjectMeta)
		for _, x := range o.Secrets {
			metas = append(metas, x.ObjectMeta)
		}
		for _, x := range o.Services {
			metas = append(metas, x.ObjectMeta)
		}
		for _, x := range o.PDBs {
			metas = append(metas, x.ObjectMeta)
		}
		if o.Endpoints != nil {
			metas = append(metas, o.Endpoints.ObjectMeta)
		}
		for _, m := range metas {
			noHactl(t, "object "+m.Name, m)
		}
		b, _ := json.Marshal(o)
		if strings.Contains(string(b), "hactl") {
			t.Errorf("the layout mentions hactl: %s", b)
		}

		sts := o.StatefulSet
		if sts.Name != "acid-x" || sts.Spec.ServiceName != "acid-x" || *sts.Spec.Replicas != 3 ||
			sts.Spec.Selector.MatchLabels["application"] != "spilo" || sts.Spec.Selector.MatchLabels["cluster-name"] != "acid-x" ||
			sts.Spec.Template.Labels["team"] != "acid" || sts.Spec.Template.Spec.ServiceAccountName != "postgres-pod" {
			t.Errorf("StatefulSet %+v", sts.ObjectMeta)
		}
		c := sts.Spec.Template.Spec.Containers[0]
		if c.Name != "postgres" || len(c.Command) != 0 || c.Image != ZalandoImage || c.ReadinessProbe == nil ||
			c.ReadinessProbe.HTTPGet.Path != "/readiness" || c.VolumeMounts[0].MountPath != "/home/postgres/pgdata" {
			t.Errorf("container %+v", c)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		if env["SCOPE"].Value != "acid-x" || env["PGROOT"].Value != "/home/postgres/pgdata/pgroot" ||
			env["POD_IP"].ValueFrom.FieldRef.FieldPath != "status.podIP" || env["KUBERNETES_ROLE_LABEL"].Value != "spilo-role" ||
			env["KUBERNETES_SCOPE_LABEL"].Value != "cluster-name" || env["PGVERSION"].Value != "15" ||
			env["PGPASSWORD_SUPERUSER"].ValueFrom.SecretKeyRef.Name != "postgres.acid-x.credentials.postgresql.acid.zalan.do" ||
			env["PGPASSWORD_STANDBY"].ValueFrom.SecretKeyRef.Name != "standby.acid-x.credentials.postgresql.acid.zalan.do" ||
			env["DCS_ENABLE_KUBERNETES_API"].Value != "true" || env["KUBERNETES_LABELS"].Value != `{"application":"spilo"}` {
			t.Errorf("env %v", c.Env)
		}
		if _, ok := env["KUBERNETES_USE_CONFIGMAPS"]; ok != cms {
			t.Errorf("ConfigMaps %v: KUBERNETES_USE_CONFIGMAPS set %v", cms, ok)
		}
		if got := env["SPILO_CONFIGURATION"].Value; got != `{"postgresql":{"parameters":{"shared_buffers":"32MB"}},"bootstrap":{"initdb":[{"auth-host":"scram-sha-256"},{"auth-local":"trust"}],"dcs":{"postgresql":{"parameters":{"max_connections":"50"}}}}}` {
			t.Errorf("SPILO_CONFIGURATION %s", got)
		}

		if len(o.Secrets) != 2 || o.Secrets[0].Name != "postgres.acid-x.credentials.postgresql.acid.zalan.do" ||
			string(o.Secrets[1].Data["username"]) != "standby" || string(o.Secrets[1].Data["password"]) != "sb" {
			t.Errorf("secrets %v", o.Secrets)
		}
		master, repl := o.Services[0], o.Services[1]
		if master.Name != "acid-x" || repl.Name != "acid-x-repl" || repl.Spec.Selector["spilo-role"] != "replica" {
			t.Errorf("services %s %s", master.Name, repl.Name)
		}
		if cms {
			if master.Spec.Selector["spilo-role"] != "master" || master.Spec.Selector["cluster-name"] != "acid-x" || o.Endpoints != nil {
				t.Errorf("ConfigMaps: master selector %v, endpoints %v", master.Spec.Selector, o.Endpoints)
			}
		} else if master.Spec.Selector != nil || o.Endpoints == nil || o.Endpoints.Name != "acid-x" {
			t.Errorf("Endpoints: master selector %v, endpoints %v", master.Spec.Selector, o.Endpoints)
		}
		if len(o.PDBs) != 2 || o.PDBs[0].Name != "postgres-acid-x-pdb" || o.PDBs[0].Spec.MinAvailable.IntValue() != 1 ||
			o.PDBs[0].Spec.Selector.MatchLabels["spilo-role"] != "master" || o.PDBs[1].Name != "postgres-acid-x-critical-op-pdb" {
			t.Errorf("PDBs %v", o.PDBs)
		}
		pg := o.Postgresql
		if pg.GetAPIVersion() != "acid.zalan.do/v1" || pg.GetKind() != "postgresql" || pg.GetName() != "acid-x" {
			t.Errorf("postgresql %v", pg.Object)
		}
	}
	p := zalandoTestParams(true)
	p.MaximumLagOnFailover = 1 << 20
	if got := zalandoSpiloConfiguration(p); !strings.Contains(got, `"dcs":{"maximum_lag_on_failover":1048576,"postgresql"`) {
		t.Errorf("SPILO_CONFIGURATION with maximum_lag_on_failover: %s", got)
	}
	if ZalandoPostgresql(p).Object["spec"].(map[string]any)["patroni"] == nil {
		t.Error("spec.patroni missing")
	}
}

func TestZalandoPassword(t *testing.T) {
	a, b := zalandoPassword(), zalandoPassword()
	if len(a) != 64 || a == b || strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		t.Errorf("passwords %q %q", a, b)
	}
}
