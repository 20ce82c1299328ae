package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/kubeflags"
)

// Every request names this process's lock identity in its user agent, so
// that an API server's audit log ties each change to a lock holder.
func TestRequestsCarryTheLockIdentity(t *testing.T) {
	var (
		mu     sync.Mutex
		agents []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.UserAgent())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
	}))
	defer srv.Close()
	c := connectTo(t, srv.URL)
	if _, err := c.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, a := range agents {
		if !strings.HasSuffix(a, " "+actions.ProcessIdentity()) {
			t.Errorf("user agent %q does not end with the lock identity %q", a, actions.ProcessIdentity())
		}
	}
}

// The live view's start sends 21 requests at once (seven lists and seven
// watches for its caches, seven lists for its first screen): none of them
// waits for client-go's client-side rate limit (by default bursts of 10).
func TestStartBurstIsNotThrottled(t *testing.T) {
	c := connectTo(t, "https://127.0.0.1:1")
	limiter := c.client.CoreV1().RESTClient().GetRateLimiter()
	for i := 0; i < 21; i++ {
		if !limiter.TryAccept() {
			t.Fatalf("request %d of the start's 21 would wait for the client-side rate limit", i+1)
		}
	}
}

// connectTo connects through a kubeconfig naming server, namespace ns.
func connectTo(t *testing.T, server string) conn {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: ns\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := kubeflags.NewConfigFlags(false)
	flags.KubeConfig = &kc
	c, err := connect(flags, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
