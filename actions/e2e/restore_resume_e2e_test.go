package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/status"
)

// TestRestoreResumeRefusesAClusterThatHasQuorum kills restore (SIGKILL)
// after it recorded its ledger entry and verified the fences, while its
// next write is on its way to the API server (held by a proxy, so the
// write never arrives): the write-ahead record of the scale-down, or the
// scale-down itself with its write-ahead record in the ledger. The
// stopped members are started again, so the cluster has quorum. A rerun
// without --force resumes the entry and is refused with
// cluster_has_quorum; the StatefulSet still wants its 3 replicas, the
// members' pods are the same and the write made after the generation is
// still there. A rerun with --force then finishes the restore.
func TestRestoreResumeRefusesAClusterThatHasQuorum(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	gen := restoreGeneration(t)
	for _, tc := range []struct {
		name string
		// hold picks the write the killed run sends last.
		hold func(r *http.Request, body []byte) bool
		// sent: the ledger records the scale-down as sending.
		sent bool
	}{
		{name: "before the scale-down's write-ahead record", hold: scaleDownWrittenAhead(cluster)},
		{name: "before the scale-down reaches the API server", hold: scaleDownSent(cluster), sent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s.WaitFailoverReady(t, cluster)
			after := fmt.Sprintf("kept-%d", time.Now().UnixNano())
			putAfter(t, cluster, after)
			pods := podUIDs(t, cluster)
			loseQuorum(t, cluster)

			proxy, kubeconfig := startHoldingProxy(t, tc.hold)
			p := s.Start(t, []string{"KUBECONFIG=" + kubeconfig}, "restore", cluster, "--generation", gen, "--yes")
			select {
			case what := <-proxy.held:
				if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-p.Done
				t.Logf("killed the restore while %s was on its way", what)
			case <-p.Done:
				t.Fatalf("the restore ended (exit %d) before the write to hold:\n%s\n%s", p.Code, p.Stdout(), p.All)
			case <-time.After(5 * time.Minute):
				_ = p.Cmd.Process.Kill()
				<-p.Done
				t.Fatalf("no write to hold within 5m:\n%s\n%s", p.Stdout(), p.All)
			}
			if p.Code != -int(syscall.SIGKILL) {
				t.Fatalf("the restore ended with %d, not by SIGKILL", p.Code)
			}

			// The ledger holds the entry in progress, fences verified; the
			// scale-down is on record only as sending, if at all.
			entry := inProgressRestore(t, cluster)
			var verified, sending bool
			for _, rc := range entry.Receipts {
				switch {
				case rc.Step == model.StepVerifyFences && rc.Outcome == model.OutcomeDone:
					verified = true
				case rc.Step == model.StepScaleDown && rc.Outcome == model.OutcomeSending:
					sending = true
				case rc.Step.Mutates():
					t.Fatalf("the killed run recorded %s %s: %+v", rc.Step, rc.Outcome, entry.Receipts)
				}
			}
			if !verified || sending != tc.sent {
				t.Fatalf("receipts: fences verified %v, scale-down sending %v (want true, %v): %+v", verified, sending, tc.sent, entry.Receipts)
			}
			assertUnscaled(t, cluster, pods, after)

			// Quorum is back.
			for _, m := range []string{cluster + "-1", cluster + "-2"} {
				if err := s.SB.Break(ctx, namespace+"/"+m, fault.Resume); err != nil {
					t.Fatalf("starting %s again: %v", m, err)
				}
			}
			s.WaitFailoverReady(t, cluster)

			r := s.Hactl(t, "restore", cluster, "--generation", gen, "--yes", "-o", "json")
			out := r.Stdout + r.Stderr
			t.Logf("rerun without --force: %s", r)
			if r.Code != 5 || !strings.Contains(out, "cluster_has_quorum") || !strings.Contains(out, "--force") || !strings.Contains(out, entry.ID) {
				t.Fatalf("rerun of %s with quorum back: want exit 5 refusing with cluster_has_quorum (--force), resuming the entry; got %s", entry.ID, r)
			}
			if tc.sent && !strings.Contains(out, "writes_discarded") {
				t.Errorf("the refusal does not say what the rest of the restore discards (writes_discarded):\n%s", r)
			}
			assertUnscaled(t, cluster, pods, after)
			if e := inProgressRestore(t, cluster); e.ID != entry.ID || len(e.Receipts) != len(entry.Receipts) {
				t.Errorf("the refused rerun changed the entry: %s with %d receipts, was %s with %d", e.ID, len(e.Receipts), entry.ID, len(entry.Receipts))
			}

			// --force finishes it.
			if r := s.Hactl(t, "restore", cluster, "--generation", gen, "--yes", "--force", "-o", "json"); r.Code != 0 {
				t.Fatalf("forced rerun: %s", r)
			}
			checkRestoredCluster(t, cluster)
			s.WaitFailoverReady(t, cluster)
			for _, e := range s.Ledger(t, cluster).Entries {
				if e.ID == entry.ID && e.State != model.EntryDone {
					t.Errorf("entry %s is %s after the forced rerun, want done", e.ID, e.State)
				}
			}
		})
	}
}

// scaleDownWrittenAhead holds the ledger write that records the
// scale-down as sending.
func scaleDownWrittenAhead(cluster string) func(*http.Request, []byte) bool {
	path := fmt.Sprintf("/api/v1/namespaces/%s/configmaps/%s", namespace, actions.LockName(cluster))
	return func(r *http.Request, body []byte) bool {
		if r.Method != http.MethodPut || r.URL.Path != path {
			return false
		}
		cm, ok := decode(body).(*corev1.ConfigMap)
		if !ok {
			return false
		}
		for _, e := range status.DecodeLedger(cm).Entries {
			if n := len(e.Receipts); e.Action == model.ActionRestore && e.State == model.EntryInProgress && n > 0 &&
				e.Receipts[n-1].Step == model.StepScaleDown && e.Receipts[n-1].Outcome == model.OutcomeSending {
				return true
			}
		}
		return false
	}
}

// scaleDownSent holds the update that scales the StatefulSet to 0 (not
// its server dry run).
func scaleDownSent(cluster string) func(*http.Request, []byte) bool {
	path := fmt.Sprintf("/apis/apps/v1/namespaces/%s/statefulsets/%s", namespace, cluster)
	return func(r *http.Request, body []byte) bool {
		if r.Method != http.MethodPut || r.URL.Path != path || r.URL.Query().Has("dryRun") {
			return false
		}
		sts, ok := decode(body).(*appsv1.StatefulSet)
		return ok && sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0
	}
}

// decode decodes a request's body, protobuf or JSON; nil if it cannot.
func decode(body []byte) runtime.Object {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil
	}
	return obj
}

// holdingProxy is a TLS proxy in front of the API server that forwards
// every request until hold picks one: that one and every later write are
// never forwarded, held until their client is gone.
type holdingProxy struct {
	hold    func(*http.Request, []byte) bool
	tripped atomic.Bool
	held    chan string
	rp      *httputil.ReverseProxy
}

func (p *holdingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if p.tripped.Load() || p.hold(r, body) {
			if !p.tripped.Swap(true) {
				p.held <- r.Method + " " + r.URL.Path
			}
			<-r.Context().Done()
			panic(http.ErrAbortHandler)
		}
	}
	p.rp.ServeHTTP(w, r)
}

// startHoldingProxy starts a holdingProxy and writes a kubeconfig that
// reaches the API server through it.
func startHoldingProxy(t *testing.T, hold func(*http.Request, []byte) bool) (*holdingProxy, string) {
	t.Helper()
	cfg, err := s.SB.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	// HTTP/1.1 only: the members are probed through port-forwards, whose
	// upgrades HTTP/2 does not carry.
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	rt := &http.Transport{TLSClientConfig: tlsCfg, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	t.Cleanup(rt.CloseIdleConnections)
	up, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{hold: hold, held: make(chan string, 1)}
	p.rp = &httputil.ReverseProxy{Transport: rt, FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(up); pr.Out.Host = up.Host }}
	srv := httptest.NewUnstartedServer(p)
	srv.StartTLS()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})

	kc, err := clientcmd.LoadFromFile(s.SB.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, c := range kc.Clusters {
		c.Server, c.CertificateAuthority, c.CertificateAuthorityData, c.TLSServerName = srv.URL, "", ca, ""
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-held")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return p, path
}

// inProgressRestore is the cluster's restore entry in progress.
func inProgressRestore(t *testing.T, cluster string) model.LedgerEntry {
	t.Helper()
	for _, e := range s.Ledger(t, cluster).Entries {
		if e.Action == model.ActionRestore && e.State == model.EntryInProgress {
			return e
		}
	}
	t.Fatalf("no restore of %s in progress in the ledger", cluster)
	return model.LedgerEntry{}
}

// putAfter writes a key after the generation, with value v.
func putAfter(t *testing.T, cluster, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Member(t, cluster+"-0").Put(ctx, restorePrefix+"after", v); err != nil {
		t.Fatal(err)
	}
}

// podUIDs are the UIDs of the cluster's three members' pods.
func podUIDs(t *testing.T, cluster string) []string {
	t.Helper()
	var out []string
	for i := range 3 {
		out = append(out, s.PodUID(t, fmt.Sprintf("%s-%d", cluster, i)))
	}
	return out
}

// assertUnscaled checks, from the API server and a member, that nothing
// was scaled or restored: the StatefulSet still wants 3 replicas, the
// members' pods are the ones in pods, and member 0 still serves the write
// made after the generation.
func assertUnscaled(t *testing.T, cluster string, pods []string, after string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sts, err := s.KC.AppsV1().StatefulSets(namespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Fatalf("StatefulSet %s wants %v replicas, want 3: it was scaled", cluster, sts.Spec.Replicas)
	}
	if now := podUIDs(t, cluster); strings.Join(now, ",") != strings.Join(pods, ",") {
		t.Fatalf("the members' pods are %v, were %v", now, pods)
	}
	c, err := s.OpenMember(ctx, cluster+"-0", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.KV().Get(ctx, restorePrefix+"after", clientv3.WithSerializable())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != after {
		t.Fatalf("%s-0 serves %v for the write made after the generation, want %q: it was restored", cluster, resp.Kvs, after)
	}
}
