package status

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/model"
)

func templateSts(command []string, env []corev1.EnvVar) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd", UID: "sts-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "sidecar", Image: "busybox"},
				{Name: "etcd", Image: "quay.io/coreos/etcd:v3.6.0", Command: command, Env: env,
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}, {Name: "conf", MountPath: "/var/lib/etcd/conf"}}},
			}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
		Status: appsv1.StatefulSetStatus{UpdateRevision: "etcd-rev2"},
	}
}

// TestTemplateFlags: every flag form the decoder accepts, for status's
// facts and for the facts actions need.
func TestTemplateFlags(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "ETCD_INITIAL_CLUSTER_TOKEN", Value: "tok-$(NS)"},
		{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "99"},
	}
	sts := templateSts([]string{"etcd",
		"--initial-cluster", "etcd-0=http://etcd-0.etcd.$(NS).svc:2380,etcd-1=http://etcd-1.etcd.$(NS).svc:2380",
		"--initial-cluster-state='existing'", "--quota-backend-bytes=4096", `--data-dir="/var/lib/etcd/data/"`}, env)
	tf := decodeTemplate(sts)
	if tf.Container != "etcd" || tf.InitialClusterState != "existing" || tf.InitialClusterStateFrom != "arg" || tf.QuotaBackendBytes != 4096 {
		t.Errorf("status facts: %+v", tf)
	}
	decodeTemplateFlags(&tf, sts)
	want := []model.InitialClusterEntry{{Name: "etcd-0", PeerURL: "http://etcd-0.etcd.db.svc:2380"}, {Name: "etcd-1", PeerURL: "http://etcd-1.etcd.db.svc:2380"}}
	if !tf.InitialClusterDecoded || !reflect.DeepEqual(tf.InitialCluster, want) {
		t.Errorf("initial cluster %v (decoded %v), want %v", tf.InitialCluster, tf.InitialClusterDecoded, want)
	}
	if tf.CertPorts != nil {
		t.Errorf("plain http peers: certificate ports %v", tf.CertPorts)
	}
	if tf.InitialClusterToken != "tok-db" {
		t.Errorf("token %q, want the env value with $(NS) resolved", tf.InitialClusterToken)
	}
	if tf.DataDir != "/var/lib/etcd/data" || tf.DataVolume != "data" || tf.DataMount != "/var/lib/etcd" {
		t.Errorf("data dir %q on %q at %q", tf.DataDir, tf.DataVolume, tf.DataMount)
	}

	// https peers: the peer port's certificate is read too, from the
	// listen URL, else the advertised one (flag or variable).
	for _, c := range []struct {
		args []string
		env  []corev1.EnvVar
		want []int
	}{
		{[]string{"etcd", "--listen-peer-urls=https://0.0.0.0:2390", "--initial-advertise-peer-urls", "https://etcd-0:2380"}, nil, []int{2390}},
		{[]string{"etcd", "--initial-advertise-peer-urls", "https://etcd-0.etcd.svc"}, nil, []int{2380}},
		{[]string{"etcd"}, []corev1.EnvVar{{Name: "ETCD_LISTEN_PEER_URLS", Value: "http://127.0.0.1:2380,https://0.0.0.0:12380"}}, []int{12380}},
		{[]string{"etcd", "--listen-peer-urls=http://0.0.0.0:2380"}, nil, nil},
		{[]string{"etcd", "--initial-advertise-peer-urls=https://${HOSTNAME}.etcd:2381"}, nil, []int{2381}},
		{[]string{"etcd", "--listen-peer-urls=https://[::]"}, nil, []int{2380}},
		{[]string{"etcd", "--listen-peer-urls=https://0.0.0.0:2379"}, nil, nil}, // the client port: read by the probe itself
	} {
		if got := decodeTemplate(templateSts(c.args, c.env)).CertPorts; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v %v: certificate ports %v, want %v", c.args, c.env, got, c.want)
		}
	}

	// An unresolved reference leaves the value decoded but empty; a
	// relative data directory is not taken.
	sts = templateSts([]string{"etcd", "--initial-cluster=$(PEERS)", "--data-dir", "data"}, nil)
	tf = decodeTemplate(sts)
	decodeTemplateFlags(&tf, sts)
	if !tf.InitialClusterDecoded || tf.InitialCluster != nil || tf.DataDir != "" || tf.InitialClusterState != "" {
		t.Errorf("unresolvable template: %+v", tf)
	}
}

// TestDecodeActionFacts: revisions, fingerprints, deletion marks and
// restore pods come from the objects whose UIDs the members were decoded
// from.
func TestDecodeActionFacts(t *testing.T) {
	sts := templateSts([]string{"etcd"}, nil)
	objs := &Objects{
		Pods: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd-0", UID: "p0", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "etcd-rev1"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd-1", UID: "p1-new", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "etcd-rev2"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "hactl-restore-etcd-0", UID: "r0",
				Labels:      map[string]string{LabelRestoreOf: "etcd", LabelMember: "etcd-0"},
				Annotations: map[string]string{AnnotationGeneration: "g1", AnnotationActionID: "a1"}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
					{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "hactl-restore-etcd-1", Labels: map[string]string{LabelRestoreOf: "etcd"}}},
		},
		PVCs: []corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "data-etcd-0", UID: "v0", DeletionTimestamp: &metav1.Time{}}},
		},
	}
	obs := model.Observation{Members: []model.Member{
		{Name: "etcd-0", Pod: &model.PodFacts{Name: "etcd-0", UID: "p0"}, PVC: &model.PVCFacts{Name: "data-etcd-0", UID: "v0"}},
		{Name: "etcd-1", Pod: &model.PodFacts{Name: "etcd-1", UID: "p1-old"}},
	}}
	obs.Cluster.Template = decodeTemplate(sts)
	DecodeActionFacts(&obs, sts, objs, decoders)

	cl := obs.Cluster
	if cl.UpdateRevision != "etcd-rev2" || cl.PodManagementPolicy != "OrderedReady" || cl.Fingerprint == "" {
		t.Errorf("cluster facts: revision %q policy %q fingerprint %q", cl.UpdateRevision, cl.PodManagementPolicy, cl.Fingerprint)
	}
	scaled := sts.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	if StatefulSetFingerprint(scaled) != cl.Fingerprint {
		t.Error("scaling changed the StatefulSet's fingerprint")
	}
	scaled.Labels = map[string]string{"edited": "yes"}
	if StatefulSetFingerprint(scaled) == cl.Fingerprint {
		t.Error("a label edit left the StatefulSet's fingerprint unchanged")
	}
	m0, m1 := obs.Members[0], obs.Members[1]
	if m0.Pod.Revision != "etcd-rev1" || m0.Pod.Fingerprint == "" || !m0.PVC.DeletionMarked || m0.PVC.Fingerprint == "" {
		t.Errorf("member etcd-0: pod %+v pvc %+v", *m0.Pod, *m0.PVC)
	}
	if m1.Pod.Revision != "" || m1.Pod.Fingerprint != "" {
		t.Errorf("member etcd-1 took the facts of a pod with another UID: %+v", *m1.Pod)
	}
	if len(cl.RestorePods) != 1 {
		t.Fatalf("restore pods %+v, want the one in namespace db", cl.RestorePods)
	}
	want := []model.RestorePodFacts{{Name: "hactl-restore-etcd-0", UID: "r0", Member: "etcd-0", Generation: "g1", Action: "a1",
		Phase: "Failed", Message: "exit code 2 (Error)", Fingerprint: cl.RestorePods[0].Fingerprint}}
	if !reflect.DeepEqual(cl.RestorePods, want) || want[0].Fingerprint == "" {
		t.Errorf("restore pods %+v, want %+v", cl.RestorePods, want)
	}
}
