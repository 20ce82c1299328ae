package scenario

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/model"
)

// druidOwned checks that meta is controlled by Etcd e (uid u) as druid's
// GetAsOwnerReference renders it, and carries nothing of hactl's.
func druidOwned(t *testing.T, what string, meta metav1.ObjectMeta, e string, u string) {
	t.Helper()
	ctl := metav1.GetControllerOfNoCopy(&meta)
	if ctl == nil || ctl.APIVersion != "druid.gardener.cloud/v1alpha1" || ctl.Kind != "Etcd" || ctl.Name != e ||
		string(ctl.UID) != u || ctl.BlockOwnerDeletion == nil || !*ctl.BlockOwnerDeletion {
		t.Errorf("%s: controller %+v", what, ctl)
	}
	if meta.Labels[DruidManagedByLabel] != "etcd-druid" || meta.Labels[DruidPartOfLabel] != e {
		t.Errorf("%s: labels %v", what, meta.Labels)
	}
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

func TestDruidScenarios(t *testing.T) {
	for _, n := range []string{"druid", "druid-cr-stale", "druid-member-stale"} {
		s, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shape != DruidOperator || s.Shape.String() != "druid-operator" {
			t.Errorf("%s: shape %v", n, s.Shape)
		}
		if !s.Owns(n+"-2") || s.Owns(n+"-x7k2q") {
			t.Errorf("%s: Owns", n)
		}
		if slices.Contains(Demo, n) {
			t.Errorf("%s is in Demo", n)
		}
	}
	if EtcdGVR.Group != "druid.gardener.cloud" || EtcdGVR.Version != "v1alpha1" || EtcdGVR.Resource != "etcds" || DruidAPIVersion != "druid.gardener.cloud/v1alpha1" {
		t.Errorf("GVR %v, API version %s", EtcdGVR, DruidAPIVersion)
	}
	if DruidMemberLease("e", 2) != "e-2" || DruidFullSnapLease("e") != "e-full-snap" || DruidDeltaSnapLease("e") != "e-delta-snap" ||
		DruidClientSecret("e") != "e-client-tls" || DruidCASecret("e") != "e-ca" {
		t.Error("names")
	}
	if got := DruidHolderIdentity(0x52ac9c992c52bd02, 0x257ff375908b00e, true); got != "52ac9c992c52bd02:257ff375908b00e:Leader" {
		t.Errorf("holder identity %s", got)
	}
}

func TestDruidMemberStaleScenario(t *testing.T) {
	s, err := Get("druid-member-stale")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Reasons, []model.ReasonCode{model.ReasonCRMemberMismatch}) || len(s.MayAlso) != 0 {
		t.Errorf("reasons %v, may also %v", s.Reasons, s.MayAlso)
	}
	ids := []uint64{0x52ac9c992c52bd02, 0x52ac9c992c52bd02 ^ 0x5a5a5a5a5a5a5a5a, 7}
	if w := druidWrongID(ids[0], ids); w == 0 || slices.Contains(ids, w) {
		t.Errorf("wrong ID %x is a member's", w)
	}
	if w := druidWrongID(0x5a5a5a5a5a5a5a5a, nil); w == 0 {
		t.Error("wrong ID 0")
	}
}

func TestDruidEtcd(t *testing.T) {
	e := DruidEtcd("ns", "e")
	for path, want := range map[string]any{
		"spec.replicas":                                  int64(3),
		"spec.etcd.clientPort":                           int64(2379),
		"spec.etcd.serverPort":                           int64(2380),
		"spec.etcd.wrapperPort":                          int64(9095),
		"spec.etcd.clientUrlTls.tlsCASecretRef.name":     "e-ca",
		"spec.etcd.clientUrlTls.serverTLSSecretRef.name": "e-server-tls",
		"spec.etcd.clientUrlTls.clientTLSSecretRef.name": "e-client-tls",
		"spec.backup.port":                               int64(8080),
		"spec.backup.store.provider":                     "Local",
		"spec.backup.store.prefix":                       "e",
		"spec.backup.deltaSnapshotPeriod":                "20s",
		"metadata.name":                                  "e",
		"metadata.namespace":                             "ns",
		"kind":                                           "Etcd",
		"apiVersion":                                     "druid.gardener.cloud/v1alpha1",
		"spec.backup.fullSnapshotSchedule":               "*/10 * * * *",
		"spec.backup.store.container":                    "e-backups",
		"spec.runAsRoot":                                 true,
		"spec.storageCapacity":                           "1Gi",
	} {
		var cur any = e.Object
		for _, k := range strings.Split(path, ".") {
			m, _ := cur.(map[string]any)
			cur = m[k]
		}
		if cur != want {
			t.Errorf("%s = %v, want %v", path, cur, want)
		}
	}
	labels := e.Object["spec"].(map[string]any)["labels"].(map[string]any)
	if labels[DruidManagedByLabel] != "etcd-druid" || labels[DruidPartOfLabel] != "e" {
		t.Errorf("spec.labels %v", labels)
	}
}

func TestDruidStatefulSet(t *testing.T) {
	s := DruidStatefulSet("ns", "e", "uid-1")
	druidOwned(t, "StatefulSet", s.ObjectMeta, "e", "uid-1")
	if s.Labels[DruidComponentLabel] != "etcd-statefulset" || s.Labels[DruidNameLabel] != "e" {
		t.Errorf("labels %v", s.Labels)
	}
	if len(s.Spec.Selector.MatchLabels) != 2 || s.Spec.Selector.MatchLabels[DruidManagedByLabel] != "etcd-druid" || s.Spec.Selector.MatchLabels[DruidPartOfLabel] != "e" {
		t.Errorf("selector %v", s.Spec.Selector)
	}
	if s.Spec.ServiceName != "e-peer" || s.Spec.PodManagementPolicy != "Parallel" || *s.Spec.Replicas != 3 {
		t.Errorf("serviceName %s, policy %s", s.Spec.ServiceName, s.Spec.PodManagementPolicy)
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "e" {
		t.Errorf("claim templates %v", s.Spec.VolumeClaimTemplates)
	}
	ps := s.Spec.Template.Spec
	for k, v := range s.Labels {
		if s.Spec.Template.Labels[k] != v {
			t.Errorf("pod label %s=%s missing", k, v)
		}
	}
	if len(ps.HostAliases) != 1 || ps.HostAliases[0].IP != "127.0.0.1" || ps.HostAliases[0].Hostnames[0] != "e-local" {
		t.Errorf("host aliases %v", ps.HostAliases)
	}
	if ps.ServiceAccountName != "e" || len(ps.InitContainers) != 0 || *ps.SecurityContext.RunAsUser != 0 {
		t.Errorf("service account %s, init containers %d", ps.ServiceAccountName, len(ps.InitContainers))
	}
	if len(ps.Containers) != 2 || ps.Containers[0].Name != "etcd" || ps.Containers[1].Name != "backup-restore" {
		t.Fatalf("containers %v", ps.Containers)
	}
	etcd, br := ps.Containers[0], ps.Containers[1]
	if !slices.Equal(etcd.Args, []string{
		"start-etcd", "--backup-restore-host-port=e-local:8080", "--etcd-server-name=e-local",
		"--backup-restore-tls-enabled=false", "--etcd-client-cert-path=/var/etcd/ssl/client/tls.crt",
		"--etcd-client-key-path=/var/etcd/ssl/client/tls.key", "--etcd-client-port=2379", "--etcd-wrapper-port=9095",
	}) || len(etcd.Command) != 0 || !strings.Contains(etcd.Image, "/etcd-wrapper:") {
		t.Errorf("etcd container: %s %v", etcd.Image, etcd.Args)
	}
	if g := etcd.ReadinessProbe.HTTPGet; g == nil || g.Path != "/readyz" || g.Port.IntValue() != 9095 || g.Scheme != corev1.URISchemeHTTP {
		t.Errorf("readiness %+v", etcd.ReadinessProbe)
	}
	ports := map[string]int32{}
	for _, p := range etcd.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["server"] != 2380 || ports["client"] != 2379 {
		t.Errorf("etcd ports %v", ports)
	}
	mounts := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, v := range c.VolumeMounts {
			m[v.Name] = v.MountPath
		}
		return m
	}
	if got := mounts(etcd); len(got) != 4 || got["e"] != "/var/etcd/data" || got["etcd-ca"] != "/var/etcd/ssl/ca" ||
		got["etcd-server-tls"] != "/var/etcd/ssl/server" || got["etcd-client-tls"] != "/var/etcd/ssl/client" {
		t.Errorf("etcd mounts %v", got)
	}
	if got := mounts(br); len(got) != 5 || got["etcd-config-file"] != "/var/etcd/config/" || got["local-backup"] != "/root/e-backups" ||
		got["etcd-client-tls"] != "/var/etcd/ssl/client" || got["e"] != "/var/etcd/data" {
		t.Errorf("backup-restore mounts %v", got)
	}
	for _, want := range []string{
		"server", "--server-port=8080", "--storage-provider=Local", "--store-prefix=e",
		"--full-snapshot-lease-name=e-full-snap", "--delta-snapshot-lease-name=e-delta-snap", "--delta-snapshot-period=20s",
		"--endpoints=https://e-local:2379", "--service-endpoints=https://e-client:2379", "--cacert=/var/etcd/ssl/ca/ca.crt",
		"--enable-member-lease-renewal=true", "--k8s-heartbeat-duration=10s", "--data-dir=/var/etcd/data/new.etcd",
	} {
		if !slices.Contains(br.Args, want) {
			t.Errorf("backup-restore args lack %s", want)
		}
	}
	env := map[string]string{}
	for _, e := range br.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = "field:" + e.ValueFrom.FieldRef.FieldPath
		}
		env[e.Name] = v
	}
	if env["POD_NAME"] != "field:metadata.name" || env["POD_NAMESPACE"] != "field:metadata.namespace" || env["STORAGE_CONTAINER"] != "e-backups" {
		t.Errorf("backup-restore env %v", env)
	}
	vols := map[string]corev1.VolumeSource{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v.VolumeSource
	}
	if cm := vols["etcd-config-file"].ConfigMap; cm == nil || cm.Name != "e-config" || cm.Items[0].Key != "etcd.conf.yaml" || *cm.DefaultMode != 0o640 {
		t.Errorf("config volume %+v", cm)
	}
	for v, secret := range map[string]string{"etcd-ca": "e-ca", "etcd-server-tls": "e-server-tls", "etcd-client-tls": "e-client-tls"} {
		if s := vols[v].Secret; s == nil || s.SecretName != secret {
			t.Errorf("volume %s: %+v", v, vols[v])
		}
	}
	if hp := vols["local-backup"].HostPath; hp == nil || hp.Path != "/etc/gardener/local-backupbuckets/e-backups" || *hp.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("local-backup %+v", hp)
	}
}

func TestDruidConfigMap(t *testing.T) {
	cm := DruidConfigMap("ns", "e", "uid-1")
	druidOwned(t, "ConfigMap", cm.ObjectMeta, "e", "uid-1")
	if cm.Name != "e-config" || cm.Labels[DruidComponentLabel] != "etcd-configmap" {
		t.Errorf("ConfigMap %s %v", cm.Name, cm.Labels)
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data["etcd.conf.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"name": "etcd-config", "data-dir": "/var/etcd/data/new.etcd", "initial-cluster-state": "new",
		"initial-cluster-token": "etcd-cluster", "listen-peer-urls": "http://0.0.0.0:2380", "listen-client-urls": "https://0.0.0.0:2379",
		"initial-cluster": "e-0=http://e-0.e-peer.ns.svc:2380,e-1=http://e-1.e-peer.ns.svc:2380,e-2=http://e-2.e-peer.ns.svc:2380",
	} {
		if cfg[k] != want {
			t.Errorf("%s = %v, want %v", k, cfg[k], want)
		}
	}
	adv := cfg["advertise-client-urls"].(map[string]any)
	if l := adv["e-1"].([]any); len(l) != 1 || l[0] != "https://e-1.e-peer.ns.svc:2379" {
		t.Errorf("advertise-client-urls %v", adv)
	}
	peers := cfg["initial-advertise-peer-urls"].(map[string]any)
	if l := peers["e-2"].([]any); len(l) != 1 || l[0] != "http://e-2.e-peer.ns.svc:2380" {
		t.Errorf("initial-advertise-peer-urls %v", peers)
	}
	sec := cfg["client-transport-security"].(map[string]any)
	if sec["cert-file"] != "/var/etcd/ssl/server/tls.crt" || sec["trusted-ca-file"] != "/var/etcd/ssl/ca/ca.crt" || sec["client-cert-auth"] != true {
		t.Errorf("client-transport-security %v", sec)
	}
	if _, ok := cfg["peer-transport-security"]; ok {
		t.Error("peer TLS configured")
	}
}

func TestDruidLeasesAndServices(t *testing.T) {
	leases := DruidLeases("ns", "e", "uid-1")
	var names []string
	for _, l := range leases {
		names = append(names, l.Name)
		druidOwned(t, "Lease "+l.Name, l.ObjectMeta, "e", "uid-1")
		want := "etcd-member-lease"
		if strings.HasSuffix(l.Name, "-snap") {
			want = "etcd-snapshot-lease"
		}
		if l.Labels[DruidComponentLabel] != want || l.Labels[DruidNameLabel] != l.Name {
			t.Errorf("Lease %s labels %v", l.Name, l.Labels)
		}
		if l.Spec.HolderIdentity != nil || l.Spec.RenewTime != nil {
			t.Errorf("Lease %s is not empty", l.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"e-0", "e-1", "e-2", "e-delta-snap", "e-full-snap"}) {
		t.Errorf("Leases %v", names)
	}
	svcs := DruidServices("ns", "e", "uid-1")
	if len(svcs) != 2 {
		t.Fatalf("%d Services", len(svcs))
	}
	client, peer := svcs[0], svcs[1]
	druidOwned(t, "client Service", client.ObjectMeta, "e", "uid-1")
	druidOwned(t, "peer Service", peer.ObjectMeta, "e", "uid-1")
	if client.Name != "e-client" || client.Spec.ClusterIP != "" || len(client.Spec.Ports) != 3 || client.Spec.Ports[0].Port != 2379 || client.Spec.Ports[2].Port != 8080 {
		t.Errorf("client Service %+v", client.Spec)
	}
	if peer.Name != "e-peer" || peer.Spec.ClusterIP != "None" || !peer.Spec.PublishNotReadyAddresses || peer.Spec.Ports[0].Port != 2380 {
		t.Errorf("peer Service %+v", peer.Spec)
	}
	if client.Spec.Selector[DruidComponentLabel] != "etcd-statefulset" || client.Spec.Selector[DruidPartOfLabel] != "e" {
		t.Errorf("selector %v", client.Spec.Selector)
	}
}
