package status

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
)

// PodProxy is an engine.ProxyGetFunc through c: a GET through the API
// server's pod proxy (RBAC get pods/proxy). The pod's own answer, of any
// status code, is returned as it came; an answer the API server gave
// itself (a Status: it refused the request, or could not reach the pod)
// is an *engine.ProxyError.
func PodProxy(c kubernetes.Interface) engine.ProxyGetFunc {
	return func(ctx context.Context, ns, pod string, port int, path string) (int, []byte, error) {
		rc := c.CoreV1().RESTClient()
		if rc == nil {
			return 0, nil, errors.New("no client reaches the API server's pod proxy")
		}
		res := rc.Get().Namespace(ns).Resource("pods").SubResource("proxy").Name(pod + ":" + strconv.Itoa(port)).Suffix(path).Do(ctx)
		var code int
		res.StatusCode(&code)
		body, err := res.Raw()
		if err == nil {
			return code, body, nil
		}
		if code == 0 {
			// No answer at all (the API server unreachable, the deadline).
			return 0, nil, err
		}
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
			return 0, nil, &engine.ProxyError{Code: code, Message: st.Message}
		}
		return code, body, nil
	}
}

// PodProxy implements proxier.
func (s APISource) PodProxy() engine.ProxyGetFunc { return PodProxy(s.Client) }

// PodProxy implements proxier: through the Watcher's client.
func (s watchSource) PodProxy() engine.ProxyGetFunc { return PodProxy(s.w.client) }

// PodProxy implements proxier: the listed Source's, if it has one.
func (s listedSource) PodProxy() engine.ProxyGetFunc {
	if p, ok := s.Source.(proxier); ok {
		return p.PodProxy()
	}
	return nil
}
