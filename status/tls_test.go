package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// startTLSEtcd runs one real etcd member that requires client certificates
// signed by the control plane's CA, and returns its client address.
func startTLSEtcd(t *testing.T, serverName string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := ln.Addr().String()
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer := ln2.Addr().String()
	ln.Close()
	ln2.Close()
	cert, key, err := cp.IssueServingCert("etcd-tls-"+strings.ReplaceAll(client, ":", "-"), []net.IP{net.ParseIP("127.0.0.1")}, []string{serverName})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(testenv.BinDir(t), "etcd"),
		"--name=m0", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls=https://"+client, "--advertise-client-urls=https://"+client,
		"--listen-peer-urls=http://"+peer, "--initial-advertise-peer-urls=http://"+peer,
		"--initial-cluster=m0=http://"+peer, "--initial-cluster-state=new",
		"--client-cert-auth", "--trusted-ca-file="+cp.CACertFile, "--cert-file="+cert, "--key-file="+key,
		"--log-level=error")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, _ := os.Create(filepath.Join(dir, "etcd.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		logf.Close()
	})
	return client
}

// TestTLSSecretNeverPrinted probes a TLS member with credentials from the
// Secret named by hactl.dev/client-tls-secret, then greps every output of
// the run (table, JSON, warnings, errors) for the key material. It also
// runs with a wrong Secret, whose failure must be reported without it.
func TestTLSSecretNeverPrinted(t *testing.T) {
	testenv.SkipShort(t)
	admin, ns := oneMemberCluster(t, "etcd-tls")
	serverName := "etcd-tls-0.etcd-tls-headless." + ns + ".svc"
	addr := startTLSEtcd(t, serverName)

	_, userCfg, err := cp.UserKubeconfig("etcd-client")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-client-tls"},
		Data:       map[string][]byte{"tls.crt": userCfg.CertData, "tls.key": userCfg.KeyData, "ca.crt": cp.CAData},
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Secret whose client certificate the member will not accept.
	_, otherCfg, err := cp.UserKubeconfig("other")
	if err != nil {
		t.Fatal(err)
	}
	bad := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-client-wrong-ca"},
		Data:       map[string][]byte{"tls.crt": otherCfg.CertData, "tls.key": otherCfg.KeyData, "ca.crt": userCfg.CertData},
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	annotate := func(name string) {
		sts, err := admin.AppsV1().StatefulSets(ns).Get(ctx, "etcd-tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sts.Annotations == nil {
			sts.Annotations = map[string]string{}
		}
		sts.Annotations[AnnotationTLSSecret] = name
		if _, err := admin.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	certWarn := time.Duration(0)
	run := func() (Result, string) {
		o := &Observer{
			Source: APISource{Client: admin}, Secrets: SecretsFrom(admin), Dial: dial, ProbeTimeout: 3 * time.Second,
			Engines: map[model.Engine]engine.Engine{etcdengine.Name: etcdengine.New()},
			Verdict: model.VerdictOptions{CertWarn: certWarn},
		}
		rs, warn, err := o.Observe(ctx, ns, "etcd-tls")
		if err != nil {
			t.Fatal(err)
		}
		var all bytes.Buffer
		fmt.Fprintf(&all, "%v\n%+v\n%#v\n", warn, rs, rs)
		b, _ := json.Marshal(ListToAPI(rs))
		all.Write(b)
		_ = PrintTable(&all, []*ClusterStatus{ToAPI(rs[0])}, TableOptions{Wide: true, Now: time.Now()})
		return rs[0], all.String()
	}
	secrets := [][]byte{userCfg.KeyData, otherCfg.KeyData}
	assertClean := func(out string) {
		t.Helper()
		for _, k := range secrets {
			body := strings.Join(strings.Split(strings.TrimSpace(string(k)), "\n")[1:3], "")
			if strings.Contains(out, body) || strings.Contains(out, string(k)) {
				t.Fatalf("output contains private key material")
			}
		}
		if strings.Contains(out, "PRIVATE KEY") {
			t.Fatalf("output mentions a PRIVATE KEY block")
		}
	}

	annotate("etcd-client-tls")
	var r Result
	var out string
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		r, out = run()
		e := r.Observation.Members[0].Engine
		return e != nil && e.Reachable, nil
	})
	assertClean(out)
	if e := r.Observation.Members[0].Engine; e.MemberID == "" || e.Version == "" {
		t.Errorf("TLS probe returned no identity: %+v", e)
	}
	// The sandbox CA's serving certificates last a year: not reported
	// within the default 30 days, reported within 400.
	if hasCode(r, model.ReasonCertExpiring, "") {
		t.Errorf("a certificate valid for a year reported within 30 days: %+v", r.Verdict.Reasons)
	}
	certWarn = 400 * 24 * time.Hour
	if r, _ = run(); !hasCode(r, model.ReasonCertExpiring, "etcd-tls-0") {
		t.Errorf("--cert-warn 400 days: want cert_expiring on etcd-tls-0: %+v", r.Verdict)
	}
	certWarn = 0

	annotate("etcd-client-wrong-ca")
	r, out = run()
	assertClean(out)
	if e := r.Observation.Members[0].Engine; e == nil || e.Reachable || e.Failure != model.ProbeFailureCredentials {
		t.Errorf("wrong CA: want a credentials failure, got %+v", e)
	}
	if !hasCode(r, model.ReasonCredentialsUnavailable, "") {
		t.Errorf("wrong CA: no credentials_unavailable: %+v", r.Verdict.Reasons)
	}

	annotate("does-not-exist")
	r, out = run()
	assertClean(out)
	if !hasCode(r, model.ReasonCredentialsUnavailable, "") || !strings.Contains(out, "does-not-exist") {
		t.Errorf("missing Secret: want credentials_unavailable naming it: %+v", r.Verdict.Reasons)
	}
}
