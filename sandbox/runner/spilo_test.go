package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/sandbox/spilostandin"
)

// spiloPod is pod ordinal 1 of the StatefulSet the Zalando operator
// renders (Endpoints mode).
func spiloPod(t *testing.T) *corev1.Pod {
	t.Helper()
	o, err := scenario.ZalandoObjects(scenario.ZalandoParams{Name: "acid-x", Namespace: "ns", PGVersion: "15", RunAsUser: 101,
		RunAsGroup: 104, SuperPassword: "su", StandbyPassword: "sb"})
	if err != nil {
		t.Fatal(err)
	}
	sts := o.StatefulSet
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "acid-x-1", Namespace: "ns", UID: "uid-1", Labels: sts.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "acid-x", UID: "uid-sts", Controller: &yes}},
		},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "pgdata",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pgdata-acid-x-1"}}})
	pod.Spec.NodeName = "node-2"
	return pod
}

func TestIsSpiloMember(t *testing.T) {
	pod := spiloPod(t)
	if !IsSpiloMember(pod) || !runs(pod) || hasEngine(pod) {
		t.Error("the operator's member pod is not run")
	}
	other := pod.DeepCopy()
	other.Labels[SpiloApplicationLabel] = "patroni"
	if IsSpiloMember(other) {
		t.Error("a pod not labelled application=spilo")
	}
	other = pod.DeepCopy()
	other.Spec.Containers[0].Command = []string{"/usr/bin/patroni", "/etc/patroni.yml"}
	if IsSpiloMember(other) {
		t.Error("a Spilo image with a command of its own")
	}
	other = pod.DeepCopy()
	other.Spec.Containers[0].Image = "ghcr.io/zalando/postgres-operator:v2.0.1"
	if IsSpiloMember(other) {
		t.Error("not a Spilo image")
	}
	for img, want := range map[string]bool{
		"ghcr.io/zalando/spilo-15:3.0-p1": true, "spilo-18": true, "r.example/x/spilo-16@sha256:abc": true,
		"ghcr.io/zalando/spilo:15": false, "ghcr.io/zalando/spilo-x:1": false, "ghcr.io/zalando/spilo-:1": false,
	} {
		if IsSpiloImage(img) != want {
			t.Errorf("IsSpiloImage(%q) = %v", img, !want)
		}
	}
	if !strings.Contains(SpiloSelector, "!"+EngineLabel) {
		t.Errorf("selector %s", SpiloSelector)
	}
}

// TestTranslateSpilo: the Spilo container, which has no command, runs the
// stand-in with the operator's environment resolved, POD_IP the member's
// address, PGROOT on the claim's directory and the reported pod IP in
// spilostandin.PodIPEnv.
func TestTranslateSpilo(t *testing.T) {
	bin := fakeBin(t)
	standins := t.TempDir()
	if err := os.WriteFile(filepath.Join(standins, spilostandin.Command), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pod := spiloPod(t)
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.2", PodIP: "10.244.5.2", HostIP: "127.0.0.1",
		Volumes:    map[string]string{"pgdata": "/host/pvc", "dshm": "/host/shm"},
		Resolve:    func(string) (string, bool) { return "", false },
		PathEnv:    bin + ":" + standins + ":/usr/bin:/bin",
		Home:       "/host/home",
		TmpDir:     "/host/tmp",
		Kubeconfig: "/host/kubeconfig",
		Objects: fakeObjects{secret: map[string]map[string]string{
			"postgres.acid-x.credentials.postgresql.acid.zalan.do": {"username": "postgres", "password": "su"},
			"standby.acid-x.credentials.postgresql.acid.zalan.do":  {"username": "standby", "password": "sb"},
		}},
	}
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != filepath.Join(standins, spilostandin.Command) || !slices.Equal(l.Argv, []string{spilostandin.Command}) {
		t.Errorf("argv %s %v", l.Path, l.Argv)
	}
	for _, kv := range []string{"POD_IP=127.5.1.2", "PGROOT=/host/pvc/pgroot", "PGPASSWORD_SUPERUSER=su", "PGPASSWORD_STANDBY=sb",
		"SCOPE=acid-x", "POD_NAMESPACE=ns", "HOSTNAME=acid-x-1", "HOME=/host/home", "KUBECONFIG=/host/kubeconfig",
		"TMPDIR=/host/tmp", spilostandin.PodIPEnv + "=10.244.5.2"} {
		if !slices.Contains(l.Env, kv) {
			t.Errorf("env lacks %s: %v", kv, l.Env)
		}
	}
	if l.Readiness == nil || l.Readiness.URL != "http://127.5.1.2:8008/readiness" {
		t.Errorf("readiness %+v", l.Readiness)
	}
}
