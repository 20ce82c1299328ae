package status

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/engine"
)

// The pod proxy passes on the pod's own answer whatever its code (a
// CloudNativePG instance manager's 500 when its PostgreSQL is down is an
// answer, not a failure to reach it), and tells the API server's own
// refusal (a Status) apart.
func TestPodProxyTellsThePodsAnswerFromTheAPIServers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/db/pods/up:8000/proxy/pg/status", "/api/v1/namespaces/db/pods/https:up:8000/proxy/pg/status":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"isPrimary":true}`))
		case "/api/v1/namespaces/db/pods/down:8000/proxy/pg/status":
			http.Error(w, "failed to connect to `user=postgres database=postgres`: dial error", http.StatusInternalServerError)
		case "/api/v1/namespaces/db/pods/denied:8000/proxy/pg/status":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"denied\" is forbidden: User \"u\" cannot get resource \"pods/proxy\"","reason":"Forbidden","code":403}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	get := PodProxy(c)
	ctx := context.Background()
	if code, body, err := get(ctx, "db", "up", "http", 8000, "/pg/status"); err != nil || code != 200 || string(body) != `{"isPrimary":true}` {
		t.Errorf("a healthy instance: %d %q %v", code, body, err)
	}
	if code, body, err := get(ctx, "db", "down", "http", 8000, "/pg/status"); err != nil || code != 500 || string(body) != "failed to connect to `user=postgres database=postgres`: dial error" {
		t.Errorf("the pod's 500: %d %q %v", code, body, err)
	}
	// --status-port-tls: asked over https, as kubectl cnpg status does.
	if code, _, err := get(ctx, "db", "up", "https", 8000, "/pg/status"); err != nil || code != 200 {
		t.Errorf("over https: %d %v", code, err)
	}
	var pe *engine.ProxyError
	if code, body, err := get(ctx, "db", "denied", "http", 8000, "/pg/status"); !errors.As(err, &pe) || pe.Code != 403 {
		t.Errorf("the API server's refusal: %d %q %v", code, body, err)
	}
}
