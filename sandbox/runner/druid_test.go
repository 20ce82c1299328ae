package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/druidstandin"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// druidPod is pod ordinal 0 of the StatefulSet etcd-druid renders.
func druidPod() *corev1.Pod {
	sts := scenario.DruidStatefulSet("ns", "e", "uid-e")
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "e-0", Namespace: "ns", UID: "uid-1", Labels: sts.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "e", UID: "uid-sts", Controller: &yes}},
		},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = "node-1"
	return pod
}

func TestIsDruidMember(t *testing.T) {
	pod := druidPod()
	if !IsDruidMember(pod) || !runs(pod) {
		t.Error("druid's member pod is not run")
	}
	other := pod.DeepCopy()
	other.Labels[DruidManagedByLabel] = "Helm"
	if IsDruidMember(other) {
		t.Error("a pod not managed by etcd-druid")
	}
	other = pod.DeepCopy()
	other.OwnerReferences = nil
	if IsDruidMember(other) {
		t.Error("a pod without a StatefulSet")
	}
	if scenario.DruidManagedByLabel != DruidManagedByLabel || scenario.DruidManagedBy != DruidManagedBy || scenario.DruidGroup != DruidGroup {
		t.Error("the runner's druid marks differ from the scenario's")
	}
}

// TestTranslateDruid: the containers of druid's images run the stand-ins
// with their own args, the pod's mounts and addresses in the context, and
// the wrapper's peer port behind the peer proxy.
func TestTranslateDruid(t *testing.T) {
	bin := fakeBin(t)
	standins := t.TempDir()
	for _, n := range druidstandin.Commands() {
		if err := os.WriteFile(filepath.Join(standins, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pod := druidPod()
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.1", PeerAddress: "127.5.2.1", PodIP: "10.244.5.1", HostIP: "127.0.0.1",
		Volumes: map[string]string{
			"e": "/host/data", "etcd-config-file": "/host/config", "etcd-ca": "/host/ca", "etcd-server-tls": "/host/server",
			"etcd-client-tls": "/host/client", "local-backup": "/host/backups",
		},
		Resolve:  func(string) (string, bool) { return "", false },
		PathEnv:  bin + ":" + standins + ":/usr/bin:/bin",
		Home:     "/host/home",
		Hosts:    map[string]string{"e-local": "127.5.1.1", "e-1.e-peer.ns.svc": "127.5.1.2"},
		PodProxy: "socks5://127.5.0.1:1080",
	}
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != filepath.Join(standins, "etcd-wrapper") || l.Argv[0] != "etcd-wrapper" || l.Argv[1] != "start-etcd" {
		t.Errorf("wrapper: %s %v", l.Path, l.Argv)
	}
	if !slices.Contains(l.Argv, "--etcd-client-cert-path=/host/client/tls.crt") || !slices.Contains(l.Argv, "--backup-restore-host-port=e-local:8080") {
		t.Errorf("wrapper args %v", l.Argv)
	}
	if !slices.Equal(l.PeerPorts, []int{2380}) {
		t.Errorf("peer ports %v", l.PeerPorts)
	}
	var sc druidstandin.Context
	for _, e := range l.Env {
		if v, ok := strings.CutPrefix(e, druidstandin.ContextEnv+"="); ok {
			if err := json.Unmarshal([]byte(v), &sc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sc.Address != "127.5.1.1" || sc.PeerAddress != "127.5.2.1" || sc.Hosts["e-1.e-peer.ns.svc"] != "127.5.1.2" ||
		sc.Mounts["/var/etcd/ssl/ca"] != "/host/ca" || sc.Mounts["/var/etcd/data"] != "/host/data" {
		t.Errorf("context %+v", sc)
	}
	l, err = Translate(pe, &pod.Spec.Containers[1])
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != filepath.Join(standins, "etcdbrctl") || l.Argv[1] != "server" || len(l.PeerPorts) != 0 {
		t.Errorf("backup-restore: %s %v %v", l.Path, l.Argv, l.PeerPorts)
	}
	if !slices.Contains(l.Env, "POD_NAME=e-0") || !slices.Contains(l.Env, "STORAGE_CONTAINER=e-backups") {
		t.Errorf("backup-restore env %v", l.Env)
	}
}
