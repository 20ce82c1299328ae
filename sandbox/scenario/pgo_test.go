package scenario

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/model"
)

func TestPGOScenarios(t *testing.T) {
	want := map[string]struct {
		cluster string
		reasons []model.ReasonCode
	}{
		"pgo":                 {"hippo", []model.ReasonCode{model.ReasonPDBAllowsQuorumLoss}},
		"pgo-lock-stale":      {"hippo-lock-stale", []model.ReasonCode{model.ReasonLeaderLockStale, model.ReasonMaintenancePaused, model.ReasonMemberUnreachable, model.ReasonPrimaryMissing, model.ReasonPDBAllowsQuorumLoss}},
		"pgo-replica-lagging": {"hippo-replica-lagging", []model.ReasonCode{model.ReasonReplicaLagging, model.ReasonPDBAllowsQuorumLoss}},
	}
	for n, w := range want {
		s, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shape != PGOOperator || s.Shape.String() != "pgo-operator" || slices.Contains(Shapes(), s.Shape) {
			t.Errorf("%s: shape %v", n, s.Shape)
		}
		if s.ClusterName() != w.cluster {
			t.Errorf("%s: cluster %s", n, s.ClusterName())
		}
		pods := PGOPods(w.cluster)
		for _, p := range pods {
			if !s.Owns(p) {
				t.Errorf("%s: does not own %s", n, p)
			}
		}
		for _, p := range []string{w.cluster + "-0", strings.TrimSuffix(pods[0], "-0"), pods[0] + "x", w.cluster + "-instance1-aaaa-0", "x" + pods[0]} {
			if s.Owns(p) {
				t.Errorf("%s: owns %s", n, p)
			}
		}
		if !slices.Equal(s.Reasons, w.reasons) {
			t.Errorf("%s: reasons %v, want %v", n, s.Reasons, w.reasons)
		}
		if slices.Contains(Demo, n) {
			t.Errorf("%s is in Demo", n)
		}
	}
	// As pg-lock-stale, and the budget.
	lockStale, _ := Get("pg-lock-stale")
	s, _ := Get("pgo-lock-stale")
	if !slices.Equal(s.Reasons, append(slices.Clone(lockStale.Reasons), model.ReasonPDBAllowsQuorumLoss)) || !slices.Equal(s.MayAlso, lockStale.MayAlso) {
		t.Errorf("pgo-lock-stale says %v/%v, pg-lock-stale %v/%v", s.Reasons, s.MayAlso, lockStale.Reasons, lockStale.MayAlso)
	}
}

func TestPGOInstanceNames(t *testing.T) {
	names := PGOInstanceNames("hippo")
	if len(names) != 3 || !slices.Equal(names, PGOInstanceNames("hippo")) {
		t.Fatalf("names %v, not stable", names)
	}
	seen := map[string]bool{}
	for _, n := range names {
		id, ok := strings.CutPrefix(n, "hippo-instance1-")
		if !ok || len(id) != 4 || strings.Trim(id, "bcdfghjklmnpqrstvwxz2456789") != "" || seen[n] {
			t.Errorf("instance name %s", n)
		}
		seen[n] = true
	}
	for _, c := range []string{"hippo-lock-stale", "hippo-replica-lagging"} {
		n := PGOInstanceNames(c)
		if n[0] == n[1] || n[1] == n[2] || n[0] == n[2] {
			t.Errorf("%s: instance names %v", c, n)
		}
	}
}

func pgoTestParams() PGOParams {
	return PGOParams{Name: "hippo", Namespace: "ns", UID: "uid-1", PGVersion: 15, RunAsUser: 101, RunAsGroup: 104,
		SuperPassword: "su", ReplicationPassword: "re"}
}

func TestPGOObjects(t *testing.T) {
	ca, err := NewPGOCA()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PGOObjects(PGOParams{Name: "hippo", Namespace: "ns", PGVersion: 15}, ca); err == nil {
		t.Error("rendered without a user and passwords")
	}
	p := pgoTestParams()
	o, err := PGOObjects(p, ca)
	if err != nil {
		t.Fatal(err)
	}
	insts := PGOInstanceNames("hippo")

	// Nothing of hactl's anywhere.
	metas := []metav1.ObjectMeta{o.ServiceAccount.ObjectMeta, o.Role.ObjectMeta, o.RoleBinding.ObjectMeta, o.PDB.ObjectMeta}
	for _, x := range o.ConfigMaps {
		metas = append(metas, x.ObjectMeta)
	}
	for _, x := range o.Secrets {
		metas = append(metas, x.ObjectMeta)
	}
	for _, x := range o.Services {
		metas = append(metas, x.ObjectMeta)
	}
	for _, x := range o.PVCs {
		metas = append(metas, x.ObjectMeta)
	}
	for _, x := range o.StatefulSets {
		metas = append(metas, x.ObjectMeta, x.Spec.Template.ObjectMeta)
	}
	for _, m := range metas {
		noHactl(t, "object "+m.Name, m)
		if m.Name != "" && !strings.HasPrefix(m.Name, "hippo") {
			t.Errorf("object %s", m.Name)
		}
	}
	b, _ := json.Marshal(o)
	if strings.Contains(string(b), "hactl") {
		t.Errorf("the layout mentions hactl: %s", b)
	}
	if b, _ := json.Marshal(PGOPostgresCluster(p)); strings.Contains(string(b), "hactl") {
		t.Errorf("the PostgresCluster mentions hactl: %s", b)
	}
	// Every object but the pod templates is controlled by the
	// PostgresCluster.
	for _, x := range o.StatefulSets {
		ref := metav1.GetControllerOf(x)
		if ref == nil || ref.Kind != "PostgresCluster" || ref.APIVersion != "postgres-operator.crunchydata.com/v1beta1" || ref.UID != "uid-1" || ref.Name != "hippo" {
			t.Errorf("StatefulSet %s controller %v", x.Name, ref)
		}
	}

	// The StatefulSets, one per instance.
	if len(o.StatefulSets) != 3 {
		t.Fatalf("%d StatefulSets", len(o.StatefulSets))
	}
	for i, sts := range o.StatefulSets {
		inst := insts[i]
		want := map[string]string{"postgres-operator.crunchydata.com/cluster": "hippo", "postgres-operator.crunchydata.com/instance-set": "instance1",
			"postgres-operator.crunchydata.com/instance": inst, "postgres-operator.crunchydata.com/data": "postgres"}
		if sts.Name != inst || *sts.Spec.Replicas != 1 || sts.Spec.ServiceName != "hippo-pods" || len(sts.Spec.VolumeClaimTemplates) != 0 ||
			sts.Spec.UpdateStrategy.Type != "OnDelete" || !mapsEqual(sts.Labels, want) {
			t.Errorf("StatefulSet %s: %+v %+v", inst, sts.ObjectMeta, sts.Spec)
		}
		sel := sts.Spec.Selector.MatchLabels
		if len(sel) != 3 || sel["postgres-operator.crunchydata.com/instance"] != inst || sel["postgres-operator.crunchydata.com/data"] != "" {
			t.Errorf("selector %v", sel)
		}
		want["postgres-operator.crunchydata.com/patroni"] = "hippo-ha"
		if !mapsEqual(sts.Spec.Template.Labels, want) {
			t.Errorf("pod labels %v", sts.Spec.Template.Labels)
		}
		spec := sts.Spec.Template.Spec
		if spec.ServiceAccountName != "hippo-instance" || *spec.SecurityContext.RunAsUser != 101 || *spec.SecurityContext.FSGroup != 104 {
			t.Errorf("pod spec %+v", spec)
		}
		c := spec.Containers[0]
		if c.Name != "database" || !slices.Equal(c.Command, []string{"sh", "-c", "--",
			`PATH="/usr/lib/postgresql/15/bin:/usr/libexec/postgresql15:/usr/pgsql-15/bin${PATH+:${PATH}}" && exec "$@"`, "--", "patroni", "/etc/patroni"}) {
			t.Errorf("container %s %q", c.Name, c.Command)
		}
		if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8008 || c.ReadinessProbe.HTTPGet.Path != "/readiness" {
			t.Errorf("readiness %+v", c.ReadinessProbe)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		if env["PATRONI_NAME"].ValueFrom.FieldRef.FieldPath != "metadata.name" ||
			env["PATRONI_KUBERNETES_POD_IP"].ValueFrom.FieldRef.FieldPath != "status.podIP" ||
			env["PATRONI_KUBERNETES_PORTS"].Value != "- name: postgres\n  port: 5432\n  protocol: TCP\n" ||
			env["PATRONI_POSTGRESQL_CONNECT_ADDRESS"].Value != "$(PATRONI_NAME).hippo-pods:5432" ||
			env["PATRONI_POSTGRESQL_LISTEN"].Value != "*:5432" ||
			env["PATRONI_POSTGRESQL_CONFIG_DIR"].Value != "/pgdata/pg15" || env["PATRONI_POSTGRESQL_DATA_DIR"].Value != "/pgdata/pg15" ||
			env["PATRONI_RESTAPI_CONNECT_ADDRESS"].Value != "$(PATRONI_NAME).hippo-pods:8008" ||
			env["PATRONI_RESTAPI_LISTEN"].Value != "*:8008" || env["PATRONICTL_CONFIG_FILE"].Value != "/etc/patroni" {
			t.Errorf("env %v", c.Env)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			vols[v.Name] = v
		}
		if pvc := vols["postgres-data"].PersistentVolumeClaim; pvc == nil || pvc.ClaimName != inst+"-pgdata" {
			t.Errorf("postgres-data %+v", vols["postgres-data"])
		}
		pr := vols["patroni-config"].Projected
		if pr == nil || len(pr.Sources) != 3 {
			t.Fatalf("patroni-config %+v", vols["patroni-config"])
		}
		if s := pr.Sources[0].ConfigMap; s == nil || s.Name != "hippo-config" || s.Items[0].Key != "patroni.yaml" || s.Items[0].Path != "~postgres-operator_cluster.yaml" {
			t.Errorf("source 0 %+v", pr.Sources[0])
		}
		if s := pr.Sources[1].ConfigMap; s == nil || s.Name != inst+"-config" || s.Items[0].Key != "patroni.yaml" || s.Items[0].Path != "~postgres-operator_instance.yaml" {
			t.Errorf("source 1 %+v", pr.Sources[1])
		}
		if s := pr.Sources[2].Secret; s == nil || s.Name != inst+"-certs" ||
			!slices.Equal(s.Items, []corev1.KeyToPath{{Key: "patroni.ca-roots", Path: "~postgres-operator/patroni.ca-roots"}, {Key: "patroni.crt-combined", Path: "~postgres-operator/patroni.crt+key"}}) {
			t.Errorf("source 2 %+v", pr.Sources[2])
		}
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		if mounts["patroni-config"] != "/etc/patroni" || mounts["postgres-data"] != "/pgdata" {
			t.Errorf("mounts %v", mounts)
		}
	}

	// The PVCs, created by PGO rather than from templates.
	for i, pvc := range o.PVCs {
		if pvc.Name != insts[i]+"-pgdata" || pvc.Labels["postgres-operator.crunchydata.com/role"] != "pgdata" ||
			pvc.Labels["postgres-operator.crunchydata.com/data"] != "postgres" || pvc.Labels["postgres-operator.crunchydata.com/instance"] != insts[i] {
			t.Errorf("PVC %+v", pvc.ObjectMeta)
		}
	}

	// The certificates: root CA, a leaf per instance for its pod's DNS
	// names, the combined key and certificate.
	secrets := map[string]*corev1.Secret{}
	for _, s := range o.Secrets {
		secrets[s.Name] = s
	}
	for _, inst := range insts {
		s := secrets[inst+"-certs"]
		if s == nil {
			t.Fatalf("no Secret %s-certs", inst)
		}
		for _, k := range []string{"patroni.ca-roots", "patroni.crt-combined", "dns.crt", "dns.key"} {
			if len(s.Data[k]) == 0 {
				t.Errorf("%s: no %s", s.Name, k)
			}
		}
		if string(s.Data["patroni.ca-roots"]) != string(ca.CertPEM) || string(s.Data["patroni.crt-combined"]) != string(s.Data["dns.key"])+string(s.Data["dns.crt"]) {
			t.Errorf("%s: ca-roots or crt-combined", s.Name)
		}
		blk, _ := pem.Decode(s.Data["dns.crt"])
		leaf, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		dns := []string{inst + "-0.hippo-pods.ns.svc.cluster.local.", inst + "-0.hippo-pods.ns.svc", inst + "-0.hippo-pods.ns", inst + "-0.hippo-pods"}
		if !slices.Equal(leaf.DNSNames, dns) || leaf.Subject.CommonName != dns[0] || len(leaf.IPAddresses) != 0 {
			t.Errorf("%s: SANs %v, CN %s", s.Name, leaf.DNSNames, leaf.Subject.CommonName)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: inst + "-0.hippo-pods", Roots: roots}); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if _, err := tls.X509KeyPair(s.Data["patroni.crt-combined"], s.Data["patroni.crt-combined"]); err != nil {
			t.Errorf("%s: crt-combined: %v", s.Name, err)
		}
	}
	back, err := ParsePGOCA(PGORootSecretObject("ns", ca).Data)
	if err != nil || !back.Cert.Equal(ca.Cert) {
		t.Errorf("root CA round trip: %v", err)
	}

	// Patroni's configuration.
	var cluster map[string]any
	if err := yaml.Unmarshal([]byte(o.ConfigMaps[0].Data["patroni.yaml"]), &cluster); err != nil || o.ConfigMaps[0].Name != "hippo-config" {
		t.Fatalf("%s: %v", o.ConfigMaps[0].Name, err)
	}
	k := cluster["kubernetes"].(map[string]any)
	if cluster["scope"] != "hippo-ha" || k["role_label"] != "postgres-operator.crunchydata.com/role" ||
		k["scope_label"] != "postgres-operator.crunchydata.com/patroni" || k["use_endpoints"] != true || k["namespace"] != "ns" ||
		k["labels"].(map[string]any)["postgres-operator.crunchydata.com/cluster"] != "hippo" {
		t.Errorf("kubernetes %v", k)
	}
	r := cluster["restapi"].(map[string]any)
	if r["cafile"] != "/etc/patroni/~postgres-operator/patroni.ca-roots" || r["certfile"] != "/etc/patroni/~postgres-operator/patroni.crt+key" ||
		r["verify_client"] != "optional" || r["keyfile"] != nil {
		t.Errorf("restapi %v", r)
	}
	if ctl := cluster["ctl"].(map[string]any); ctl["cacert"] != r["cafile"] || ctl["certfile"] != r["certfile"] {
		t.Errorf("ctl %v", ctl)
	}
	if strings.Contains(o.ConfigMaps[0].Data["patroni.yaml"], "maximum_lag_on_failover") {
		t.Error("maximum_lag_on_failover set")
	}
	if !strings.HasPrefix(o.ConfigMaps[1].Data["patroni.yaml"], "# Generated by postgres-operator. DO NOT EDIT.\n") || o.ConfigMaps[1].Name != insts[0]+"-config" ||
		!strings.Contains(o.ConfigMaps[1].Data["patroni.yaml"], "waldir=/pgdata/pg15_wal") {
		t.Errorf("instance config %s", o.ConfigMaps[1].Data["patroni.yaml"])
	}

	// Services, the budget, RBAC.
	svcs := map[string]*corev1.Service{}
	for _, s := range o.Services {
		svcs[s.Name] = s
	}
	if s := svcs["hippo-pods"]; s == nil || s.Spec.ClusterIP != "None" || !s.Spec.PublishNotReadyAddresses || len(s.Spec.Selector) != 1 ||
		s.Spec.Selector["postgres-operator.crunchydata.com/cluster"] != "hippo" {
		t.Errorf("hippo-pods %+v", s)
	}
	if s := svcs["hippo-ha"]; s == nil || s.Spec.Selector != nil || s.Labels["postgres-operator.crunchydata.com/patroni"] != "hippo-ha" || o.LeaderService != s {
		t.Errorf("hippo-ha %+v", s)
	}
	if s := svcs["hippo-ha-config"]; s == nil || s.Spec.Selector != nil || s.Spec.ClusterIP != "None" {
		t.Errorf("hippo-ha-config %+v", s)
	}
	if s := svcs["hippo-primary"]; s == nil || s.Spec.Selector != nil || s.Labels["postgres-operator.crunchydata.com/role"] != "primary" {
		t.Errorf("hippo-primary %+v", s)
	}
	if s := svcs["hippo-replicas"]; s == nil || s.Spec.Selector["postgres-operator.crunchydata.com/role"] != "replica" {
		t.Errorf("hippo-replicas %+v", s)
	}
	if o.PDB.Name != "hippo-set-instance1" || o.PDB.Spec.MinAvailable.IntValue() != 1 || o.PDB.Spec.MaxUnavailable != nil ||
		!mapsEqual(o.PDB.Spec.Selector.MatchLabels, map[string]string{"postgres-operator.crunchydata.com/cluster": "hippo", "postgres-operator.crunchydata.com/instance-set": "instance1"}) {
		t.Errorf("PDB %+v", o.PDB)
	}
	if o.ServiceAccount.Name != "hippo-instance" || o.Role.Name != "hippo-instance" || o.RoleBinding.RoleRef.Name != "hippo-instance" ||
		len(o.Role.Rules) != 3 || o.Role.Rules[0].Resources[0] != "endpoints" {
		t.Errorf("RBAC %+v %+v", o.Role, o.RoleBinding)
	}

	p.MaximumLagOnFailover = 1 << 20
	if o, _ := PGOObjects(p, ca); !strings.Contains(o.ConfigMaps[0].Data["patroni.yaml"], "maximum_lag_on_failover: 1048576") {
		t.Errorf("maximum_lag_on_failover missing: %s", o.ConfigMaps[0].Data["patroni.yaml"])
	}
	if PGOPostgresCluster(p).Object["spec"].(map[string]any)["patroni"] == nil {
		t.Error("spec.patroni missing")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
