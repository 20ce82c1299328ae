package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// cozyLabel names a cozystack member's cluster on its pod.
const cozyLabel = "etcd-operator.cozystack.io/cluster"

// cozyMember is what the API server and the member itself say of one
// member of a cozystack cluster, read without hactl.
type cozyMember struct {
	name, podUID string
	seed         bool
	// recorded is the EtcdMember's status.memberID (%016x); id and
	// clusterID are what the member answers (%x), "" when it does not.
	recorded, id, clusterID string
}

// cozyCluster reads a cozystack scenario's members independently of
// hactl: its pods by the operator's label, its EtcdMembers through the
// API, and each running member's own status with the operator's client
// certificate, through a port-forward to its pod.
func cozyCluster(t *testing.T, scenario string) (name, ns string, members map[string]*cozyMember) {
	t.Helper()
	name, ns = cluster(t, scenario)
	ctx := context.Background()
	pods, err := s.KC.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cozyLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	members = map[string]*cozyMember{}
	for _, p := range pods.Items {
		members[p.Name] = &cozyMember{name: p.Name, podUID: string(p.UID)}
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
	raw, err := s.KC.Discovery().RESTClient().Get().AbsPath("/apis/etcd-operator.cozystack.io/v1alpha2/namespaces/" + ns + "/etcdmembers").DoRaw(ctx)
	if err != nil {
		t.Fatalf("listing EtcdMembers: %v", err)
	}
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     struct {
				ClusterName string `json:"clusterName"`
				Bootstrap   bool   `json:"bootstrap"`
			} `json:"spec"`
			Status struct {
				MemberID string `json:"memberID"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	for _, em := range l.Items {
		m := members[em.Metadata.Name]
		if em.Spec.ClusterName != name || m == nil {
			continue
		}
		m.seed, m.recorded = em.Spec.Bootstrap, em.Status.MemberID
	}
	tc := cozyTLS(t, ns, name)
	for _, m := range members {
		m.id, m.clusterID = cozyAsk(ns, name, m.name, tc)
	}
	return name, ns, members
}

// cozyTLS is the operator's own client TLS: its client key pair, and
// the CA of the server Secret.
func cozyTLS(t *testing.T, ns, cluster string) *tls.Config {
	t.Helper()
	ctx := context.Background()
	srv, err := s.KC.CoreV1().Secrets(ns).Get(ctx, cluster+"-server-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := s.KC.CoreV1().Secrets(ns).Get(ctx, cluster+"-operator-client-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cl.Data["tls.crt"], cl.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.Data["ca.crt"])
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// cozyAsk asks member (pod) its own member and cluster ID, "" when it
// does not answer.
func cozyAsk(ns, cluster, pod string, tc *tls.Config) (id, clusterID string) {
	// The endpoint's host is the name the serving certificate is
	// checked against: the pod's under the headless Service.
	return askMember(ns, pod, pod+"."+cluster+"."+ns+".svc:2379", clientv3.Config{TLS: tc.Clone()})
}

// askMember asks member pod, through a port-forward and without hactl,
// its own member and cluster ID, with cfg's credentials and ep as its
// endpoint (whose host the serving certificate is checked against); ""
// when it does not answer.
func askMember(ns, pod, ep string, cfg clientv3.Config) (id, clusterID string) {
	cfg.Endpoints, cfg.DialTimeout, cfg.Logger = []string{ep}, 5*time.Second, zap.NewNop()
	cfg.DialOptions = []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return s.Dial(ctx, ns, pod, 2379)
	})}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return "", ""
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, ep)
	if err != nil {
		return "", ""
	}
	return fmt.Sprintf("%x", st.Header.MemberId), fmt.Sprintf("%x", st.Header.ClusterId)
}

// cozyStatus is statusReasons of a cozystack cluster, laid out as the
// operator's: every reason of want ("code member" strings) and no other
// than those of codes mayAlso (what a down member also shows, depending
// on the instant it is probed); polled: a member may answer a moment
// late.
func cozyStatus(t *testing.T, ns, name string, want []string, mayAlso ...model.ReasonCode) status.ClusterStatus {
	t.Helper()
	cs := statusReasons(t, ns, name, want, mayAlso...)
	if cs.Layout != "cozystack etcd-operator" || !strings.Contains(cs.ManagedBy, "cozystack") {
		t.Errorf("layout %q, managed by %q", cs.Layout, cs.ManagedBy)
	}
	return cs
}

// statusReasons is `kubectl hactl status NAME -o json` once it reports
// every reason of want ("code member" strings) and no other than those
// of codes mayAlso; polled.
func statusReasons(t *testing.T, ns, name string, want []string, mayAlso ...model.ReasonCode) status.ClusterStatus {
	t.Helper()
	var cs status.ClusterStatus
	var out, errOut string
	var code int
	err := poll.Wait(2*time.Minute, func() error {
		out, errOut, code = kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
		cs = status.ClusterStatus{}
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			return fmt.Errorf("not a ClusterStatus (exit %d): %v", code, err)
		}
		var got []string
		for _, r := range cs.Verdict.Reasons {
			got = append(got, strings.TrimSpace(r.Code+" "+r.Member))
			if !slices.Contains(want, got[len(got)-1]) && !slices.Contains(mayAlso, model.ReasonCode(r.Code)) {
				return fmt.Errorf("reason %s %s: %s; want %q (and maybe %v)", r.Code, r.Member, r.Detail, want, mayAlso)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return fmt.Errorf("no reason %s among %q", w, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %v\n%s%s", ns, name, err, out, errOut)
	}
	return cs
}

// seedOf is the cluster's seed member (spec.bootstrap).
func seedOf(t *testing.T, members map[string]*cozyMember) *cozyMember {
	t.Helper()
	for _, m := range members {
		if m.seed {
			return m
		}
	}
	t.Fatal("no EtcdMember has spec.bootstrap")
	return nil
}

// The cozystack etcd-operator's clusters, laid out as v0.5 lays them
// out (EtcdCluster, EtcdMembers with random names, pods they control,
// TLS Secrets the EtcdCluster names, no hactl label anywhere), through
// the real kubectl: found and probed with the operator's own client
// certificate, each member by the ID it answers with; the seed 000 pod
// still told to bootstrap a new cluster is named; explain hands over the
// operator's own way (delete the EtcdMember), and every action is
// refused with nothing changed.
func TestCozystackEtcdThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns, members := cozyCluster(t, "cozystack")
	if len(members) != 3 {
		t.Fatalf("%d member pods, want 3", len(members))
	}
	seed := seedOf(t, members)
	cs := cozyStatus(t, ns, name, []string{"bootstrap_flag_stale " + seed.name})
	if !cs.Verdict.ControlReady || cs.Verdict.FailoverReady {
		t.Errorf("control-ready %v, failover-ready %v: want control-ready only", cs.Verdict.ControlReady, cs.Verdict.FailoverReady)
	}
	var clusterID string
	for _, m := range cs.Members {
		want := members[m.Name]
		if want == nil || m.Reachable == nil || !*m.Reachable || m.MemberID != want.id || want.id == "" {
			t.Errorf("member %s: reachable %v, ID %q; the member says %+v", m.Name, m.Reachable, m.MemberID, want)
			continue
		}
		clusterID = want.clusterID
	}
	if op := cs.Operator; op == nil || op.Err != "" || op.ClusterID != clusterID || op.Available == nil || !*op.Available {
		t.Errorf("the EtcdCluster's word: %+v; the members answer for cluster %s", op, clusterID)
	}
	out, _, _ := kubectl(t, "hactl", "status", name, "-n", ns)
	if !strings.Contains(out, "EtcdCluster "+name+" says: Available") {
		t.Errorf("the table does not show the EtcdCluster's word:\n%s", out)
	}
	out, errOut, _ := kubectl(t, "hactl", "status", "-l", cozyLabel+"="+name, "-n", ns, "--no-probe", "-o", "name")
	if !strings.Contains(out, "pod/"+seed.name) {
		t.Errorf("status -l %s=%s does not list its pods:\n%s%s", cozyLabel, name, out, errOut)
	}

	// The operator's way to rebuild a member other than the seed.
	var member *cozyMember
	for _, m := range members {
		if !m.seed && (member == nil || m.name < member.name) {
			member = m
		}
	}
	out, errOut, code := kubectl(t, "hactl", "explain", name, member.name, "-n", ns, "--intent", "reseed")
	for _, want := range []string{"member_managed", "kubectl delete etcdmember.etcd-operator.cozystack.io " + member.name + " -n " + ns, "member " + member.id} {
		if !strings.Contains(out, want) {
			t.Errorf("explain (exit %d) does not say %q:\n%s%s", code, want, out, errOut)
		}
	}
	for _, verb := range [][]string{
		{"replace", name, member.name},
		{"reseed", name, member.name},
		{"seed", name, "--generation", "g1"},
		{"restore", name, "--generation", "g1"},
	} {
		out, errOut, code = kubectl(t, append(append([]string{"hactl"}, verb...), "-n", ns, "--yes")...)
		if code != 5 || !strings.Contains(out+errOut, "member_managed") {
			t.Errorf("%s: exit %d, want 5 (refused, member_managed)\n%s%s", verb[0], code, out, errOut)
		}
	}
	// Nothing changed, as the API server and the members tell.
	_, _, again := cozyCluster(t, "cozystack")
	for n, m := range members {
		if a := again[n]; a == nil || a.podUID != m.podUID || a.id != m.id {
			t.Errorf("member %s changed: %+v → %+v", n, m, a)
		}
	}
	ctx := context.Background()
	if _, err := s.KC.CoordinationV1().Leases(ns).Get(ctx, "hactl-"+name, metav1.GetOptions{}); err == nil {
		t.Error("a refused action took a lock Lease")
	}
}

// The operator's word against the members' answers, each disagreement in
// a cluster of its own: the seed that bootstrapped a cluster of its own
// (its EtcdMember still holds its old ID); an EtcdCluster Available while
// two of three members are down (cozystack/etcd-operator#367); an
// EtcdMember recording another ID than its member answers with, for
// which explain withholds the operator's steps (deleting it would remove
// another member).
func TestCozystackOperatorWordThroughKubectl(t *testing.T) {
	skipShort(t)
	t.Run("seed re-bootstrapped", func(t *testing.T) {
		name, ns, members := cozyCluster(t, "cozystack-split")
		seed := seedOf(t, members)
		var others []string
		for _, m := range members {
			if m != seed {
				others = append(others, m.clusterID)
			}
		}
		if seed.clusterID == "" || len(others) != 2 || others[0] != others[1] || seed.clusterID == others[0] {
			t.Fatalf("the seed answers for cluster %q, the others for %q: not split", seed.clusterID, others)
		}
		// The others still list the seed's old member ID, which no one
		// answers with.
		cs := cozyStatus(t, ns, name, []string{"bootstrap_flag_stale " + seed.name, "cluster_id_split " + seed.name, "cr_member_mismatch " + seed.name},
			model.ReasonMemberUnreachable)
		if cs.Verdict.ControlReady {
			t.Error("a split cluster is control-ready")
		}
	})
	t.Run("Available while no quorum answers", func(t *testing.T) {
		name, ns, members := cozyCluster(t, "cozystack-cr-stale")
		answering := 0
		var down []string
		for _, m := range members {
			if m.id != "" {
				answering++
			} else {
				down = append(down, m.name)
			}
		}
		if answering != 1 {
			t.Fatalf("%d members answer, want 1", answering)
		}
		want := []string{"cr_status_stale", "quorum_unavailable"}
		for _, d := range down {
			want = append(want, "member_unreachable "+d)
		}
		// With no quorum: no leader, no lag, pods not ready, no ready
		// client endpoint.
		cs := cozyStatus(t, ns, name, want, model.ReasonLeaderMissing, model.ReasonLagUnknown, model.ReasonPodNotReady, model.ReasonClientEndpointsMissing)
		if cs.Verdict.ControlReady {
			t.Error("a cluster without quorum is control-ready")
		}
	})
	t.Run("an EtcdMember records another ID", func(t *testing.T) {
		name, ns, members := cozyCluster(t, "cozystack-member-stale")
		var stale *cozyMember
		for _, m := range members {
			if m.recorded != "" && m.id != "" && strings.TrimLeft(m.recorded, "0") != m.id {
				stale = m
			}
		}
		if stale == nil {
			t.Fatalf("no EtcdMember records another ID than its member answers: %+v", members)
		}
		cozyStatus(t, ns, name, []string{"cr_member_mismatch " + stale.name})
		out, errOut, code := kubectl(t, "hactl", "explain", name, stale.name, "-n", ns, "--intent", "replace")
		if !strings.Contains(out, "operator_record_mismatch") || !strings.Contains(out, "runbook_withheld") || strings.Contains(out, "kubectl delete etcdmember") {
			t.Errorf("explain (exit %d) hands over the operator's steps while it would remove another member:\n%s%s", code, out, errOut)
		}
	})
}
