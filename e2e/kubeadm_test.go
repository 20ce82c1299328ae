package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// kubeadmNodes are the control-plane nodes of the kubeadm scenario, one
// etcd member (mirror pod etcd-<node>) on each.
var kubeadmNodes = []string{"node-1", "node-2", "node-3"}

// kubeadmPKI is where the kubeadm scenario's first control-plane node
// keeps its etcd certificates (docs/sandbox.md), as a user copies them
// from a real node.
func kubeadmPKI() string {
	return filepath.Join(s.SB.Dir, "nodes", "node-1", "etc", "kubernetes", "pki", "etcd")
}

// kubeadmCertFlags are etcdctl's habit, as hactl takes it: the files of
// the first control-plane node.
func kubeadmCertFlags() []string {
	d := kubeadmPKI()
	return []string{"--etcd-cacert", filepath.Join(d, "ca.crt"), "--etcd-cert", filepath.Join(d, "healthcheck-client.crt"), "--etcd-key", filepath.Join(d, "healthcheck-client.key")}
}

// kubeadmCluster is the kubeadm scenario's cluster, or skips.
func kubeadmCluster(t *testing.T) {
	t.Helper()
	name, ns := cluster(t, "kubeadm")
	if name != "etcd" || ns != "kube-system" {
		t.Fatalf("the kubeadm scenario's cluster is %s/%s, want kube-system/etcd", ns, name)
	}
}

// kubeadmMembers asks etcd itself, not hactl, for its member list: a
// clientv3 client with the node's healthcheck-client certificate,
// through a port-forward to etcd-node-1. It returns member IDs (hex) by
// name.
func kubeadmMembers(t *testing.T) map[string]string {
	t.Helper()
	d := kubeadmPKI()
	pair, err := tls.LoadX509KeyPair(filepath.Join(d, "healthcheck-client.crt"), filepath.Join(d, "healthcheck-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(d, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"localhost:2379"}, DialTimeout: 10 * time.Second,
		TLS: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12},
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return s.Dial(ctx, "kube-system", "etcd-node-1", 2379)
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("member list through etcd-node-1: %v", err)
	}
	out := map[string]string{}
	for _, m := range l.Members {
		out[m.Name] = fmt.Sprintf("%x", m.ID)
	}
	return out
}

// kubeadm's stacked etcd, laid out as kubeadm and the kubelet lay it out
// (mirror pods in kube-system, client certificates only as files on the
// nodes, no hactl label anywhere), through the real kubectl: found,
// probed with the files, judged failover-ready with the members' own IDs;
// without the files it says what to pass; explain prints kubeadm's
// runbook for the member, and replace changes nothing.
func TestKubeadmEtcdThroughKubectl(t *testing.T) {
	skipShort(t)
	kubeadmCluster(t)
	ctx := context.Background()
	pods, err := s.KC.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=etcd,tier=control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(kubeadmNodes) {
		t.Fatalf("%d etcd mirror pods in kube-system, want %d", len(pods.Items), len(kubeadmNodes))
	}
	uids := map[string]string{}
	for _, p := range pods.Items {
		uids[p.Name] = string(p.UID)
		for k := range p.Labels {
			if strings.Contains(k, "hactl") {
				t.Errorf("pod %s carries label %s: the layout must be found without one", p.Name, k)
			}
		}
		for k := range p.Annotations {
			if strings.Contains(k, "hactl") {
				t.Errorf("pod %s carries annotation %s", p.Name, k)
			}
		}
	}
	ids := kubeadmMembers(t)

	var cs status.ClusterStatus
	out, errOut, code := kubectl(t, append([]string{"hactl", "status", "etcd", "-n", "kube-system", "-o", "json"}, kubeadmCertFlags()...)...)
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("not a ClusterStatus (exit %d): %v\n%s%s", code, err, out, errOut)
	}
	if code != 0 || !cs.Verdict.FailoverReady || cs.Layout != "kubeadm static pods" || !strings.Contains(cs.ManagedBy, "kubelet") {
		t.Errorf("exit %d, failover-ready %v (%+v), layout %q, managed by %q\n%s", code, cs.Verdict.FailoverReady, cs.Verdict.Reasons, cs.Layout, cs.ManagedBy, errOut)
	}
	for _, m := range cs.Members {
		node := strings.TrimPrefix(m.Name, "etcd-")
		if m.Reachable == nil || !*m.Reachable || m.MemberID != ids[node] {
			t.Errorf("member %s: reachable %v, ID %q; etcd says %q", m.Name, m.Reachable, m.MemberID, ids[node])
		}
	}

	// Without the files: not asked, exit 4, and what to pass; what each
	// member's plaintext metrics listener (127.0.0.1:2381, kubeadm's)
	// says comes beside: its own ID, as etcd's client port tells, and
	// which facts stay unknown.
	out, errOut, code = kubectl(t, "hactl", "status", "etcd", "-n", "kube-system", "-o", "json")
	if code != 4 || !strings.Contains(out+errOut, "--etcd-cert") {
		t.Errorf("without certificates: exit %d, want 4 and what to pass\n%s%s", code, out, errOut)
	}
	cs = status.ClusterStatus{}
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("without certificates, not a ClusterStatus: %v\n%s", err, out)
	}
	said := map[string]string{}
	for _, r := range cs.Verdict.Reasons {
		if r.Code == string(model.ReasonCredentialsUnavailable) {
			said[r.Member] = r.Detail
		}
	}
	for node, id := range ids {
		if d := said["etcd-"+node]; !strings.Contains(d, "its metrics listener (port 2381") || !strings.Contains(d, "says member "+id+",") || !strings.Contains(d, "cluster ID, member list, term and alarms stay unknown") {
			t.Errorf("without certificates, etcd-%s: %q; want what its metrics listener says of member %s", node, d, id)
		}
	}

	// Found among every namespace's clusters, without a label.
	out, errOut, _ = kubectl(t, "hactl", "status", "-A", "--no-probe", "-o", "name")
	if !slices.Contains(strings.Fields(out), "pod/etcd-node-1") {
		t.Errorf("status -A does not list kube-system's etcd:\n%s%s", out, errOut)
	}

	member := "etcd-node-2"
	out, errOut, code = kubectl(t, append([]string{"hactl", "explain", "etcd", member, "-n", "kube-system", "--intent", "reseed"}, kubeadmCertFlags()...)...)
	for _, want := range []string{"member_managed", "member remove " + ids["node-2"], "on node-2:", "kubeadm join phase control-plane-join etcd"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain (exit %d) does not say %q:\n%s%s", code, want, out, errOut)
		}
	}

	for _, verb := range [][]string{
		{"replace", "etcd", member},
		{"reseed", "etcd", member},
		{"seed", "etcd", "--generation", "g1"},
		{"restore", "etcd", "--generation", "g1"},
	} {
		out, errOut, code = kubectl(t, append(append([]string{"hactl"}, verb...), append([]string{"-n", "kube-system", "--yes"}, kubeadmCertFlags()...)...)...)
		if code != 5 || !strings.Contains(out+errOut, "member_managed") {
			t.Errorf("%s: exit %d, want 5 (refused, member_managed)\n%s%s", verb[0], code, out, errOut)
		}
	}
	// Nothing changed, as etcd and the API server tell.
	after, err := s.KC.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=etcd,tier=control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range after.Items {
		if uids[p.Name] != string(p.UID) || p.DeletionTimestamp != nil {
			t.Errorf("pod %s was touched: uid %s → %s, deletion %v", p.Name, uids[p.Name], p.UID, p.DeletionTimestamp)
		}
	}
	if again := kubeadmMembers(t); fmt.Sprint(again) != fmt.Sprint(ids) {
		t.Errorf("member list changed: %v → %v", ids, again)
	}
	if _, err := s.KC.CoordinationV1().Leases("kube-system").Get(ctx, "hactl-etcd", metav1.GetOptions{}); err == nil {
		t.Error("a refused action took a lock Lease in kube-system")
	}
	if _, err := s.KC.CoreV1().ConfigMaps("kube-system").Get(ctx, "hactl-etcd", metav1.GetOptions{}); err == nil {
		t.Error("a refused action wrote a ledger in kube-system")
	}
}
