package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// kubeadmStackedEtcd checks, in TestSandbox's sandbox, that the kubeadm
// scenario is laid out as kubeadm and the kubelet lay it out: three mirror pods
// Running and Ready, found by kubeadm's labels with nothing of hactl's on
// them; one 3-member cluster, asked with the minted healthcheck-client
// certificate; a client without a certificate refused; `kubectl
// port-forward` to port 2381 (declared by no container) serving etcd's
// metrics; and a fault injected into a kube-system member by
// namespace/pod (isolate, over TLS peers, then heal).
func kubeadmStackedEtcd(t *testing.T, sb *Sandbox, dir string) {
	kc := kube(t, sb)
	ctx := context.Background()
	var ci *ClusterInfo
	for i, c := range sb.State.Clusters {
		if c.Scenario == "kubeadm" {
			ci = &sb.State.Clusters[i]
		}
	}
	if ci == nil || ci.Namespace != "kube-system" || ci.Name != "etcd" || len(ci.Reasons) != 0 || len(ci.ProbeArgs) != 6 {
		t.Fatalf("the kubeadm scenario's cluster: %+v", ci)
	}

	pods, err := kc.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=etcd,tier=control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d etcd pods in kube-system", len(pods.Items))
	}
	var urls []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !scenario.PodReady(&p) {
			t.Errorf("%s: %s, ready %v", p.Name, p.Status.Phase, scenario.PodReady(&p))
		}
		for k := range p.Labels {
			if strings.Contains(k, "hactl.dev") {
				t.Errorf("%s: label %s", p.Name, k)
			}
		}
		for k := range p.Annotations {
			if strings.Contains(k, "hactl.dev") {
				t.Errorf("%s: annotation %s", p.Name, k)
			}
		}
		if p.Annotations["kubernetes.io/config.mirror"] == "" || p.Name != "etcd-"+p.Spec.NodeName {
			t.Errorf("%s on %s: not a mirror pod (%v)", p.Name, p.Spec.NodeName, p.Annotations)
		}
		u := p.Annotations[scenario.KubeadmAdvertiseClientURLsAnnotation]
		if !strings.HasPrefix(u, "https://") {
			t.Fatalf("%s: advertise-client-urls %q", p.Name, u)
		}
		urls = append(urls, u)
	}

	node1 := filepath.Join(dir, "nodes", "node-1")
	tc, err := scenario.KubeadmClientTLS(node1, "etcd/healthcheck-client")
	if err != nil {
		t.Fatal(err)
	}
	call := func(tc *tls.Config, url string, f func(context.Context, *clientv3.Client) error) error {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second, TLS: tc, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer c.Close()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return f(cctx, c)
	}
	var cluster uint64
	for _, u := range urls {
		err := call(tc, u, func(ctx context.Context, c *clientv3.Client) error {
			l, err := c.MemberList(ctx)
			if err != nil {
				return err
			}
			if len(l.Members) != 3 {
				return fmt.Errorf("%d members", len(l.Members))
			}
			for _, m := range l.Members {
				if m.IsLearner || !strings.HasPrefix(m.Name, "node-") {
					return fmt.Errorf("member %x %q learner %v", m.ID, m.Name, m.IsLearner)
				}
			}
			if cluster != 0 && l.Header.ClusterId != cluster {
				return fmt.Errorf("cluster %x, another member said %x", l.Header.ClusterId, cluster)
			}
			cluster = l.Header.ClusterId
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}

	// Without a client certificate: refused (client-cert-auth), by the
	// member that just answered with one.
	noCert := tc.Clone()
	noCert.Certificates = nil
	host := strings.TrimPrefix(urls[0], "https://")
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", host, noCert)
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		// TLS 1.3: the server refuses once the handshake's last flight
		// arrives, which the first read waits for.
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") && !strings.Contains(err.Error(), "bad certificate") {
		t.Fatalf("a client without a certificate: %v, want it refused for want of a certificate", err)
	}
	t.Logf("without a certificate: %v", err)

	t.Run("kubectl port-forward to 2381 serves the metrics", func(t *testing.T) {
		ep := portForward(t, sb, "kube-system", "etcd-node-1", 2381)
		hc := &http.Client{Timeout: 10 * time.Second}
		resp, err := hc.Get("http://" + ep + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "etcd_server_is_leader") {
			t.Fatalf("GET /metrics through the port-forward: %d, %d bytes, %v", resp.StatusCode, len(b), err)
		}
	})

	t.Run("break addresses a kube-system member: isolate and heal over TLS", func(t *testing.T) {
		m, err := sb.Member(ctx, "kube-system/etcd-node-3")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.ClientURL, "https://") {
			t.Errorf("client URL %s", m.ClientURL)
		}
		leader := func() (uint64, error) {
			var l uint64
			err := call(tc, m.ClientURL, func(ctx context.Context, c *clientv3.Client) error {
				st, err := c.Status(ctx, m.ClientURL)
				if err == nil {
					l = st.Leader
				}
				return err
			})
			return l, err
		}
		if err := sb.Break(ctx, "kube-system/etcd-node-3", fault.Isolate); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "the isolated member to lose its leader", func() error {
			l, err := leader()
			if err != nil {
				return err
			}
			if l != 0 {
				return fmt.Errorf("leader %x", l)
			}
			return nil
		})
		if err := sb.Break(ctx, "kube-system/etcd-node-3", fault.Heal); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "the healed member to follow a leader", func() error {
			l, err := leader()
			if err != nil {
				return err
			}
			if l == 0 {
				return errors.New("no leader")
			}
			return nil
		})
	})
}
