package source

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/model"
)

// druidSTS is Etcd name's StatefulSet as etcd-druid renders it (client
// TLS on, the CA under key caKey).
func druidSTS(ns, name, caKey string) appsv1.StatefulSet {
	three := int32(3)
	labels := map[string]string{LabelDruidManagedBy: DruidManagedBy, LabelDruidPartOf: name}
	secret := func(v, s string) corev1.Volume {
		return corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}}
	}
	return appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("sts-" + name), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: DruidGroup + "/" + DruidVersion, Kind: "Etcd", Name: name, UID: "etcd-uid", Controller: new(true)}}},
		Spec: appsv1.StatefulSetSpec{Replicas: &three, ServiceName: name + "-peer",
			Selector:             &metav1.LabelSelector{MatchLabels: labels},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: name}}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{
					{Name: "etcd", Image: "europe-docker.pkg.dev/gardener-project/releases/gardener/etcd-wrapper:v0.6.1",
						Args: []string{"start-etcd", "--backup-restore-host-port=" + name + "-local:8080", "--etcd-client-port=2379"}},
					{Name: "backup-restore", Image: "europe-docker.pkg.dev/gardener-project/releases/gardener/etcdbrctl:v0.40.0",
						Args: []string{"server", "--cacert=/var/etcd/ssl/ca/" + caKey, "--cert=/var/etcd/ssl/client/tls.crt"}},
				},
				Volumes: []corev1.Volume{secret("etcd-ca", name+"-ca"), secret("etcd-server-tls", name+"-server-tls"), secret("etcd-client-tls", name+"-client-tls")},
			}}},
	}
}

// druidLease is a Lease of Etcd etcd's as druid creates it, renewed
// with holder at at (nil holder: never renewed).
func druidLease(ns, etcd, name string, holder *string, at time.Time) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelDruidManagedBy: DruidManagedBy, LabelDruidPartOf: etcd}}}
	if holder != nil {
		l.Spec.HolderIdentity = holder
		l.Spec.RenewTime = &metav1.MicroTime{Time: at}
	}
	return l
}

// An Etcd's StatefulSet is druid's layout, not the plain StatefulSets':
// its client TLS is what it mounts for the backup-restore sidecar (the
// CA under the key --cacert names), its server name the one the
// sidecar dials, druid's runbook names its claims, and the Etcd's status
// and Leases come beside: Ready, the members' IDs as etcd spells them
// (from the status, else the member Lease), and the snapshot Leases.
func TestDruidClusters(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ns := "shoot"
	sts := druidSTS(ns, "etcd-main", "bundle.crt")
	plain := druidSTS(ns, "etcd-plain", "ca.crt")
	plain.OwnerReferences = nil
	raw := `{"items":[{"metadata":{"namespace":"shoot","name":"etcd-main"},
	 "spec":{"replicas":3,"etcd":{"clientUrlTls":{"tlsCASecretRef":{"name":"etcd-main-ca","dataKey":"bundle.crt"}}},"backup":{"store":{"provider":"Local"}}},
	 "status":{"readyReplicas":3,"conditions":[{"type":"Ready","status":"True","reason":"Quorate","message":"The majority of ETCD members is ready"},
	   {"type":"BackupReady","status":"True","reason":"BackupSucceeded"}],
	  "members":[{"name":"etcd-main-0","id":"00000000000000a1","role":"Leader","status":"Ready","reason":"LeaseSucceeded"},
	   {"name":"etcd-main-1","role":"Member","status":"Ready"},
	   {"name":"etcd-main-2","id":"c3","role":"Member","status":"NotReady","reason":"UnknownGracePeriodExceeded"}]}}]}`
	etcds, err := DecodeDruidEtcds([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	holder := func(s string) *string { return &s }
	d := &Druid{Etcds: etcds, Leases: []coordinationv1.Lease{
		druidLease(ns, "etcd-main", "etcd-main-1", holder("b2:7f00aa:Member"), t0),
		druidLease(ns, "etcd-main", "etcd-main-full-snap", holder("120"), t0.Add(-time.Hour)),
		druidLease(ns, "etcd-main", "etcd-main-delta-snap", holder("135"), t0.Add(-10*time.Second)),
	}}
	detect := func(map[string]string, model.PodTemplate) (model.Engine, bool) { return "etcd", true }
	o := Objects{StatefulSets: []appsv1.StatefulSet{sts, plain}, Druid: d}
	if ws := (StatefulSets{}).Workloads(o, detect); len(ws) != 1 || ws[0].Owner.Name != "etcd-plain" {
		t.Fatalf("the StatefulSets layout took %d workloads; want etcd-plain alone (an Etcd's is druid's)", len(ws))
	}
	ws := (DruidClusters{}).Workloads(o, detect)
	if len(ws) != 1 {
		t.Fatalf("%d druid workloads, want 1", len(ws))
	}
	w := ws[0]
	if w.Layout != DruidLayout || w.Owner.Name != "etcd-main" || w.Replicas != 3 || w.Service != "etcd-main-peer" || w.ServerName != "etcd-main-local" {
		t.Errorf("workload %s/%s layout %q replicas %d service %q server name %q", w.Owner.Namespace, w.Owner.Name, w.Layout, w.Replicas, w.Service, w.ServerName)
	}
	if w.TLSSecret != "etcd-main-client-tls" || w.TLSCASecret != "etcd-main-ca" || w.TLSCAKey != "bundle.crt" || !strings.Contains(w.TLSSecretFrom, "clientUrlTls") {
		t.Errorf("TLS %q, CA %q key %q, from %q", w.TLSSecret, w.TLSCASecret, w.TLSCAKey, w.TLSSecretFrom)
	}
	if w.ManagedBy == nil || !slices.ContainsFunc(w.ManagedBy.Runbook, func(s string) bool { return strings.Contains(s, "kubectl delete pvc etcd-main-{member}") }) ||
		!slices.ContainsFunc(w.ManagedBy.Runbook, func(s string) bool { return strings.Contains(s, druidDisableProtection+"=") }) {
		t.Errorf("runbook %+v does not delete the claim etcd-main-<member> behind druid's protection annotation", w.ManagedBy)
	}
	if ms := w.Members(NewIndex(o), t0); len(ms) != 3 || ms[2].Name != "etcd-main-2" {
		t.Errorf("members %+v", ms)
	}
	op := w.Operator
	if op == nil || op.Err != "" || op.Kind != "Etcd" || op.Condition() != "Ready" || op.Available == nil || !*op.Available || op.AvailableReason != "Quorate" || op.ReadyMembers != 2 || !op.RemovesByName {
		t.Fatalf("operator facts %+v", op)
	}
	ids := map[string]string{}
	for _, m := range op.Members {
		ids[m.Name] = m.MemberID
	}
	if want := map[string]string{"etcd-main-0": "a1", "etcd-main-1": "b2", "etcd-main-2": "c3"}; !maps.Equal(ids, want) {
		t.Errorf("recorded IDs %v, want %v (the status's, else the member Lease's; as etcd spells them)", ids, want)
	}
	b := op.Backup
	if b == nil || b.Ready == nil || !*b.Ready || b.FullRevision != 120 || b.FullAt == nil || !b.FullAt.Equal(t0.Add(-time.Hour)) || b.DeltaRevision != 135 || b.DeltaAt == nil {
		t.Errorf("backup %+v", b)
	}

	// The Leases not readable: the Etcd's word stays, the backup says why.
	d.LeasesErr, d.Leases = errors.New("leases is forbidden"), nil
	op = (DruidClusters{}).Workloads(o, detect)[0].Operator
	if op.Err != "" || op.Backup == nil || op.Backup.Err == "" || op.Backup.FullAt != nil {
		t.Errorf("leases unreadable: %+v, backup %+v", op, op.Backup)
	}
	// The Etcds not readable, or the StatefulSet's Etcd gone: the
	// cluster still shows, with the reason, and still removes by name.
	for _, d := range []*Druid{nil, {Err: errors.New("etcds is forbidden")}, {}} {
		op := (DruidClusters{}).Workloads(Objects{StatefulSets: []appsv1.StatefulSet{sts}, Druid: d}, detect)[0].Operator
		if op.Err == "" || !op.RemovesByName || op.Available != nil {
			t.Errorf("druid %+v: operator facts %+v", d, op)
		}
	}
}

// A member Lease's holder is "<id>:<role>" (older sidecars) or
// "<id>:<cluster>:<role>"; anything else names no member.
func TestDruidHolder(t *testing.T) {
	for holder, want := range map[string]string{"00ab:Leader": "ab", "ab:cd:Member": "ab", "": "", "ab": "", "a:b:c:d": "", "zz:Member": `"zz"`} {
		h := holder
		if id, _ := druidHolder(&coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &h}}); id != want {
			t.Errorf("holder %q: id %q, want %q", holder, id, want)
		}
	}
	if id, _ := druidHolder(&coordinationv1.Lease{}); id != "" {
		t.Errorf("no holder: id %q", id)
	}
}
