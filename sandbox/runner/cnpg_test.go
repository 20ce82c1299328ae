package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
)

// cnpgPod is an instance pod as cnpg's pkg/specs/pods.go renders it (the
// parts the runner reads).
func cnpgPod() *corev1.Pod {
	t, f := true, false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "c-1", Namespace: "ns",
			Labels:          map[string]string{"cnpg.io/cluster": "c", "cnpg.io/instanceName": "c-1", "cnpg.io/podRole": "instance"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "postgresql.cnpg.io/v1", Kind: "Cluster", Name: "c", UID: "u", Controller: &t}}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &f,
			Containers: []corev1.Container{{
				Name: "postgres", Image: "ghcr.io/cloudnative-pg/postgresql:15",
				Command: []string{"/controller/manager", "instance", "run"},
				Env: []corev1.EnvVar{{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"}, {Name: "POD_NAME", Value: "c-1"},
					{Name: "PGHOST", Value: "/controller/run"}, {Name: "TMPDIR", Value: "/controller/tmp"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "pgdata", MountPath: "/var/lib/postgresql/data"},
					{Name: "scratch-data", MountPath: "/controller"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8000)}}},
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
		},
	}
}

func TestIsCNPGInstance(t *testing.T) {
	pod := cnpgPod()
	if !IsCNPGInstance(pod) || !runs(pod) {
		t.Fatal("a cnpg instance pod is not run")
	}
	if !automounts(pod) {
		t.Error("its projected ServiceAccount token gives no KUBECONFIG")
	}
	other := cnpgPod()
	other.OwnerReferences[0].Kind = "Pooler"
	if IsCNPGInstance(other) {
		t.Error("a pod no Cluster controls is run")
	}
	job := cnpgPod()
	job.Spec.Containers[0].Command = []string{"/controller/manager", "instance", "join"}
	job.Labels["cnpg.io/podRole"] = "pooler"
	if IsCNPGInstance(job) {
		t.Error("a non-instance pod is run")
	}
}

func TestTranslateCNPG(t *testing.T) {
	bin := fakeBin(t)
	standins := t.TempDir()
	if err := os.WriteFile(filepath.Join(standins, cnpgstandin.Command), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pod := cnpgPod()
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.2", PodIP: "10.244.5.2", HostIP: "127.0.0.1",
		Volumes:    map[string]string{"pgdata": "/host/pvc", "scratch-data": "/host/scratch"},
		Resolve:    func(string) (string, bool) { return "", false },
		PathEnv:    bin + ":" + standins + ":/usr/bin:/bin",
		Home:       "/host/home",
		TmpDir:     "/host/tmp",
		Kubeconfig: "/host/kubeconfig",
		Objects:    fakeObjects{},
	}
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != filepath.Join(standins, cnpgstandin.Command) || !slices.Equal(l.Argv, []string{cnpgstandin.Command, "instance", "run"}) {
		t.Errorf("argv %s %v", l.Path, l.Argv)
	}
	for _, kv := range []string{"PGDATA=/host/pvc/pgdata", "PGHOST=/host/scratch/run", "TMPDIR=/host/scratch/tmp", "KUBECONFIG=/host/kubeconfig",
		cnpgstandin.AddressEnv + "=127.5.1.2", cnpgstandin.PodIPEnv + "=10.244.5.2", cnpgstandin.ImageEnv + "=ghcr.io/cloudnative-pg/postgresql:15"} {
		if !slices.Contains(l.Env, kv) {
			t.Errorf("env lacks %s: %v", kv, l.Env)
		}
	}
	if l.Readiness == nil || l.Readiness.URL != "http://127.5.1.2:8000/readyz" {
		t.Errorf("readiness %+v", l.Readiness)
	}
}
