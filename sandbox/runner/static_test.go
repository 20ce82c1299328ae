package runner

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// kubeadmPod is the mirror pod of node-2's etcd joining node-1's, as the
// kubeadm scenario creates it, with the member address 127.5.1.2 standing
// for the node's IP.
func kubeadmPod(t *testing.T) *corev1.Pod {
	t.Helper()
	initial := []scenario.KubeadmMember{
		{Name: "node-1", PeerURL: "https://127.5.1.1:2380"},
		{Name: "node-2", PeerURL: "https://127.5.1.2:2380"},
	}
	pod, err := scenario.KubeadmMirrorPod(scenario.KubeadmEtcdStaticPod("node-2", "127.5.1.2", initial), "node-2", "node-uid", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	pod.UID = "uid-2"
	return pod
}

func argMap(argv []string) map[string]string {
	out := map[string]string{}
	for _, a := range argv[1:] {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

func TestTranslateKubeadmEtcd(t *testing.T) {
	pod := kubeadmPod(t)
	if !runs(pod) || !IsStaticControlPlane(pod) {
		t.Fatal("the runner does not run kubeadm's etcd mirror pod")
	}
	root := "/sbx/nodes/node-2"
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.2", PeerAddress: "127.5.2.2", PodIP: "127.5.1.2", HostIP: "127.5.1.2",
		Volumes:  map[string]string{"etcd-data": root + "/var/lib/etcd", "etcd-certs": root + "/etc/kubernetes/pki/etcd"},
		Resolve:  func(string) (string, bool) { return "", false },
		PathEnv:  fakeBin(t),
		Home:     "/sbx/home",
		TmpDir:   "/sbx/tmp",
		PodProxy: "socks5://127.5.0.1:1080",
	}
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	got := argMap(l.Argv)
	want := map[string]string{
		"listen-client-urls":          "https://127.5.1.2:2379",
		"advertise-client-urls":       "https://127.5.1.2:2379",
		"listen-peer-urls":            "https://127.5.2.2:2380",
		"initial-advertise-peer-urls": "https://127.5.1.2:2380",
		"initial-cluster":             "node-1=https://127.5.1.1:2380,node-2=https://127.5.1.2:2380",
		"initial-cluster-state":       "existing",
		"listen-metrics-urls":         "http://127.5.1.2:2381",
		"data-dir":                    root + "/var/lib/etcd",
		"cert-file":                   root + "/etc/kubernetes/pki/etcd/server.crt",
		"key-file":                    root + "/etc/kubernetes/pki/etcd/server.key",
		"trusted-ca-file":             root + "/etc/kubernetes/pki/etcd/ca.crt",
		"peer-cert-file":              root + "/etc/kubernetes/pki/etcd/peer.crt",
		"peer-trusted-ca-file":        root + "/etc/kubernetes/pki/etcd/ca.crt",
		"name":                        "node-2",
		"client-cert-auth":            "true",
		"peer-client-cert-auth":       "true",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("--%s=%q, want %q", k, got[k], v)
		}
	}
	if !reflect.DeepEqual(l.PeerPorts, []int{2380}) {
		t.Errorf("peer ports %v", l.PeerPorts)
	}
	if l.Readiness == nil || l.Readiness.URL != "http://127.5.1.2:2381/readyz" || l.Readiness.Period != time.Second {
		t.Errorf("readiness %+v", l.Readiness)
	}
	for _, kv := range l.Env {
		if strings.HasPrefix(kv, "KUBECONFIG=") {
			t.Errorf("a static pod got %s", kv)
		}
	}
}

func TestForwardPortsOfHostNetworkPods(t *testing.T) {
	pod := kubeadmPod(t)
	if got := containerPorts(pod); !reflect.DeepEqual(got, []int{2379, 2380, 2381}) {
		t.Fatalf("kubeadm etcd forwards %v", got)
	}
	u := portForwardObject(pod, "127.5.3.2")
	fw, _, _ := unstructured.NestedSlice(u.Object, "spec", "forwards")
	var ports []int64
	for _, f := range fw {
		m := f.(map[string]any)
		ports = append(ports, m["ports"].([]any)[0].(int64))
		if tgt := m["target"].(map[string]any); tgt["address"] != "127.5.3.2" || tgt["port"] != m["ports"].([]any)[0] {
			t.Errorf("forward %v", m)
		}
	}
	if !reflect.DeepEqual(ports, []int64{2379, 2380, 2381}) {
		t.Fatalf("PortForward ports %v", ports)
	}

	// A pod network pod forwards what it declares only; separate-argument
	// and env forms are read too for hostNetwork pods.
	c := corev1.Container{
		Args:  []string{"--listen-client-urls", "http://0.0.0.0:12379", "--listen-peer-urls=http://0.0.0.0:12380"},
		Env:   []corev1.EnvVar{{Name: "ETCD_LISTEN_METRICS_URLS", Value: "http://127.0.0.1:12381,http://127.0.0.1:12381"}},
		Ports: []corev1.ContainerPort{{ContainerPort: 9000}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	if got := containerPorts(p); !reflect.DeepEqual(got, []int{9000}) {
		t.Errorf("pod network pod forwards %v", got)
	}
	p.Spec.HostNetwork = true
	if got := containerPorts(p); !reflect.DeepEqual(got, []int{9000, 12379, 12380, 12381}) {
		t.Errorf("hostNetwork pod forwards %v", got)
	}
}

func TestRunsOnlyItsPods(t *testing.T) {
	pod := func(labels, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann}}
	}
	mirror := map[string]string{MirrorAnnotation: "abc"}
	cp := map[string]string{"tier": "control-plane"}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod(cp, mirror), true},
		{pod(cp, nil), false}, // a control-plane Deployment's pod: kwok's
		{pod(map[string]string{"tier": "frontend"}, mirror), false},
		{pod(map[string]string{EngineLabel: "etcd"}, nil), true},
		{pod(map[string]string{RunLabel: "true"}, nil), true},
		{pod(nil, nil), false},
	} {
		if got := runs(tc.pod); got != tc.want {
			t.Errorf("runs(%v, %v) = %v", tc.pod.Labels, tc.pod.Annotations, got)
		}
	}
}

func TestIsBitnamiMember(t *testing.T) {
	pod := func(labels map[string]string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Env: env}}},
		}
	}
	chart := map[string]string{BitnamiNameLabel: BitnamiName, "app.kubernetes.io/instance": "e"}
	onK8s := corev1.EnvVar{Name: BitnamiOnK8sEnv, Value: "yes"}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod(chart, corev1.EnvVar{Name: "ETCD_NAME", Value: "e-0"}, onK8s), true},
		{pod(chart, corev1.EnvVar{Name: BitnamiOnK8sEnv, Value: "no"}), false},
		{pod(chart), false},
		{pod(map[string]string{BitnamiNameLabel: "postgresql"}, onK8s), false},
		{pod(nil, onK8s), false},
	} {
		if got := IsBitnamiMember(tc.pod); got != tc.want {
			t.Errorf("IsBitnamiMember(%v, %v) = %v", tc.pod.Labels, tc.pod.Spec.Containers[0].Env, got)
		}
		if got := runs(tc.pod); got != tc.want {
			t.Errorf("runs(%v, %v) = %v", tc.pod.Labels, tc.pod.Spec.Containers[0].Env, got)
		}
	}
}

func TestHostPathDir(t *testing.T) {
	root := t.TempDir()
	typ := func(x corev1.HostPathType) *corev1.HostPathType { return &x }
	d, err := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/var/lib/etcd", Type: typ(corev1.HostPathDirectoryOrCreate)})
	if err != nil || d != filepath.Join(root, "var/lib/etcd") {
		t.Fatalf("DirectoryOrCreate: %q, %v", d, err)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("not created: %v", err)
	}
	if _, err := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/etc/missing", Type: typ(corev1.HostPathDirectory)}); !errors.Is(err, errHostPathMissing) {
		t.Fatalf("Directory on a missing path: %v", err)
	}
	if _, err := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/var/lib/etcd", Type: typ(corev1.HostPathDirectory)}); err != nil {
		t.Fatalf("Directory on an existing one: %v", err)
	}
	f, err := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/var/lib/etcd/f", Type: typ(corev1.HostPathFileOrCreate)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/var/lib/etcd/f", Type: typ(corev1.HostPathFile)}); err != nil {
		t.Fatalf("File on %s: %v", f, err)
	}
	if _, err := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/var/lib/etcd/f", Type: typ(corev1.HostPathDirectoryOrCreate)}); !errors.Is(err, errHostPathMissing) {
		t.Fatalf("DirectoryOrCreate on a file: %v", err)
	}
	// A path never leaves the node's root.
	if d, _ := hostPathDir(root, &corev1.HostPathVolumeSource{Path: "/../../x"}); d != filepath.Join(root, "x") {
		t.Fatalf("escaped: %s", d)
	}
}

func TestDataDirsOfHostPathEtcd(t *testing.T) {
	pod := kubeadmPod(t)
	vols := map[string]string{"etcd-data": "/n/var/lib/etcd", "etcd-certs": "/n/etc/kubernetes/pki/etcd"}
	if got := dataDirs(pod, vols); !reflect.DeepEqual(got, []string{"/n/var/lib/etcd"}) {
		t.Fatalf("data dirs %v", got)
	}
	// A data dir below the mount, and none when a claim holds it.
	pod.Spec.Containers[0].Command = append(pod.Spec.Containers[0].Command, "--data-dir", "/var/lib/etcd/member-data")
	if got := dataDirs(pod, vols); !reflect.DeepEqual(got, []string{"/n/var/lib/etcd/member-data"}) {
		t.Fatalf("data dirs %v", got)
	}
	pod.Spec.Volumes[1].HostPath = nil
	if got := dataDirs(pod, vols); len(got) != 0 {
		t.Fatalf("data dirs of a non-hostPath volume %v", got)
	}
}

func TestClientScheme(t *testing.T) {
	if s := clientScheme(kubeadmPod(t)); s != "https" {
		t.Errorf("kubeadm etcd: %s", s)
	}
	if s := clientScheme(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Args: []string{"--listen-client-urls", "http://0.0.0.0:2379"}}}}}); s != "http" {
		t.Errorf("plain etcd: %s", s)
	}
}

func TestByPodIPMemberAddress(t *testing.T) {
	a := NewAddresses(5)
	m, err := a.For("kube-system", "etcd-node-1")
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]string{m.PodIP: "127.5.1.1:2379", m.Address: "127.5.1.1:2379", "127.5.1.9": "", "127.6.1.1": "", "127.5.1.1x": ""} {
		got, ok := a.ByPodIP(ip, 2379)
		if got != want || ok != (want != "") {
			t.Errorf("ByPodIP(%s) = %q, %v; want %q", ip, got, ok, want)
		}
	}
}

func TestSocketInode(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9C40 0101057F:0950 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 20 4 30 10 -1
   1: 0101057F:0950 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
`
	dialer := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	front := &net.TCPAddr{IP: net.IPv4(127, 5, 1, 1), Port: 2384}
	if ino, ok := socketInode(table, dialer, front); !ok || ino != 4242 {
		t.Fatalf("dialer's socket: %d, %v", ino, ok)
	}
	if ino, ok := socketInode(table, front, dialer); !ok || ino != 4343 {
		t.Fatalf("accepted socket: %d, %v", ino, ok)
	}
	if _, ok := socketInode(table, dialer, &net.TCPAddr{IP: net.IPv4(127, 5, 1, 2), Port: 2384}); ok {
		t.Fatal("matched another connection")
	}
}

// TestPeerProxyIsolatesTLSSenders runs the proxy in front of a TLS server
// (etcd's https peer URLs: nothing of the sender can be read) and checks
// that isolating the sender, found as the process holding the dialling
// socket (this test's), closes its open connection and refuses new ones.
func TestPeerProxyIsolatesTLSSenders(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	pp := newPeerProxy(t.Logf)
	defer pp.close()
	me := os.Getpid()
	pp.owner = func(ino uint64) string {
		if holdsSocket(me, ino) {
			return "127.0.0.3"
		}
		return ""
	}
	if err := pp.ensure("127.0.0.2", "127.0.0.1", []int{port}); err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	dial := func() (*tls.Conn, error) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", hostPort("127.0.0.2", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test server
		if err != nil {
			return nil, err
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		// Read the whole answer: the connection stays open (keep-alive).
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		_ = c.SetDeadline(time.Time{})
		return c, nil
	}
	open, err := dial()
	if err != nil {
		t.Fatalf("healthy proxy refused: %v", err)
	}
	defer open.Close()
	pp.isolate("127.0.0.3")
	_ = open.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the isolated sender's open connection was not closed: %v", err)
	}
	if c, err := dial(); err == nil {
		c.Close()
		t.Fatal("a TLS connection from an isolated member got through")
	}
	pp.heal("127.0.0.3")
	c, err := dial()
	if err != nil {
		t.Fatalf("healed proxy refused: %v", err)
	}
	c.Close()
}
