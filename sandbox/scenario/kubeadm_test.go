package scenario

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestKubeadmEtcdPods(t *testing.T) {
	first := KubeadmEtcdStaticPod("node-1", "127.5.1.1", nil)
	join := KubeadmEtcdStaticPod("node-2", "127.5.1.2", []KubeadmMember{
		{Name: "node-1", PeerURL: "https://127.5.1.1:2380"}, {Name: "node-2", PeerURL: "https://127.5.1.2:2380"},
	})
	cmd := first.Spec.Containers[0].Command
	if cmd[0] != "etcd" || !sort.StringsAreSorted(cmd[1:]) {
		t.Fatalf("command not etcd with sorted flags: %v", cmd)
	}
	if !slices.Contains(cmd, "--initial-cluster=node-1=https://127.5.1.1:2380") || slices.ContainsFunc(cmd, func(a string) bool { return strings.HasPrefix(a, "--initial-cluster-state") }) {
		t.Errorf("first node's flags %v", cmd)
	}
	jc := join.Spec.Containers[0].Command
	if !slices.Contains(jc, "--initial-cluster=node-1=https://127.5.1.1:2380,node-2=https://127.5.1.2:2380") || !slices.Contains(jc, "--initial-cluster-state=existing") {
		t.Errorf("joining node's flags %v", jc)
	}
	seen := time.Unix(100, 0)
	m1, err := KubeadmMirrorPod(first, "node-1", "uid-1", seen)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := KubeadmMirrorPod(join, "node-2", "uid-2", seen)
	again, _ := KubeadmMirrorPod(first, "node-1", "uid-1", seen)
	if m1.Name != "etcd-node-1" || m1.Namespace != "kube-system" || m1.Spec.NodeName != "node-1" || !m1.Spec.HostNetwork {
		t.Fatalf("mirror pod %s/%s on %q", m1.Namespace, m1.Name, m1.Spec.NodeName)
	}
	h := m1.Annotations[configHashAnnotation]
	if len(h) != 32 || m1.Annotations[configMirrorAnnotation] != h || again.Annotations[configHashAnnotation] != h || m2.Annotations[configHashAnnotation] == h {
		t.Errorf("hashes %q %q %q", h, again.Annotations[configHashAnnotation], m2.Annotations[configHashAnnotation])
	}
	if m1.Annotations[configSourceAnnotation] != "file" || m1.Annotations[configSeenAnnotation] == "" ||
		m1.Annotations[KubeadmAdvertiseClientURLsAnnotation] != "https://127.5.1.1:2379" {
		t.Errorf("annotations %v", m1.Annotations)
	}
	if m1.Labels["component"] != "etcd" || m1.Labels["tier"] != "control-plane" || len(m1.Labels) != 2 {
		t.Errorf("labels %v", m1.Labels)
	}
	for k := range m1.Labels {
		if strings.Contains(k, "hactl.dev") {
			t.Errorf("label %s", k)
		}
	}
	for k := range m1.Annotations {
		if strings.Contains(k, "hactl.dev") {
			t.Errorf("annotation %s", k)
		}
	}
	o := m1.OwnerReferences
	if len(o) != 1 || o[0].APIVersion != "v1" || o[0].Kind != "Node" || o[0].Name != "node-1" || o[0].UID != "uid-1" || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("owner references %+v", o)
	}
	if len(m1.Spec.Tolerations) != 1 || m1.Spec.Tolerations[0].Effect != corev1.TaintEffectNoExecute || m1.Spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v", m1.Spec.Tolerations)
	}
	if m1.Spec.PriorityClassName != "system-node-critical" || m1.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("priority %q, security context %+v", m1.Spec.PriorityClassName, m1.Spec.SecurityContext)
	}
	c := m1.Spec.Containers[0]
	if len(c.Ports) != 0 || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/livez" || c.ReadinessProbe.HTTPGet.Port.IntValue() != 2381 {
		t.Errorf("container %+v", c)
	}
	if first.Name != "etcd" || first.Spec.NodeName != "" || first.Annotations[configMirrorAnnotation] != "" {
		t.Error("KubeadmMirrorPod changed the static pod")
	}
	s, _ := Get("kubeadm")
	if s.ClusterNamespace("hactl-demo") != "kube-system" || s.ClusterName() != "etcd" || !s.Owns("etcd-node-2") || s.Owns("kubeadm-0") {
		t.Error("the kubeadm scenario's namespace or members")
	}
	h2, _ := Get("healthy")
	if h2.ClusterNamespace("ns") != "ns" || h2.ClusterName() != "healthy" || !h2.Owns("healthy-2") || h2.Owns("healthy-x") || h2.Owns("etcd-node-1") {
		t.Error("a StatefulSet scenario's namespace or members")
	}
}

func readCert(t *testing.T, p string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", p)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestKubeadmEtcdPKI(t *testing.T) {
	root := t.TempDir()
	ca, err := newEtcdCA()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKubeadmEtcdPKI(root, ca, "node-1", net.ParseIP("127.5.1.1")); err != nil {
		t.Fatal(err)
	}
	etcd := filepath.Join(root, "etc/kubernetes/pki/etcd")
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, filepath.Join(etcd, "ca.crt")))
	if cn := readCert(t, filepath.Join(etcd, "ca.crt")).Subject.CommonName; cn != "etcd-ca" {
		t.Errorf("CA %q", cn)
	}
	for _, tc := range []struct {
		path, cn string
		usage    x509.ExtKeyUsage
		host     string
	}{
		{filepath.Join(etcd, "server.crt"), "node-1", x509.ExtKeyUsageServerAuth, "127.5.1.1"},
		{filepath.Join(etcd, "server.crt"), "node-1", x509.ExtKeyUsageClientAuth, "localhost"},
		{filepath.Join(etcd, "peer.crt"), "node-1", x509.ExtKeyUsageServerAuth, "127.0.0.1"},
		{filepath.Join(etcd, "peer.crt"), "node-1", x509.ExtKeyUsageClientAuth, "node-1"},
		{filepath.Join(etcd, "healthcheck-client.crt"), "kube-etcd-healthcheck-client", x509.ExtKeyUsageClientAuth, ""},
		{filepath.Join(root, "etc/kubernetes/pki/apiserver-etcd-client.crt"), "kube-apiserver-etcd-client", x509.ExtKeyUsageClientAuth, ""},
	} {
		c := readCert(t, tc.path)
		if c.Subject.CommonName != tc.cn {
			t.Errorf("%s: CN %q", tc.path, c.Subject.CommonName)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
			t.Errorf("%s for %q: %v", tc.path, tc.host, err)
		}
		key := strings.TrimSuffix(tc.path, ".crt") + ".key"
		if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", key, fi, err)
		}
	}
	if _, err := KubeadmClientTLS(root, "etcd/healthcheck-client"); err != nil {
		t.Error(err)
	}
	if _, err := KubeadmClientTLS(root, "apiserver-etcd-client"); err != nil {
		t.Error(err)
	}
}
