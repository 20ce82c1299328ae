package status

import (
	"context"
	"errors"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
)

// PodProxy is an engine.ProxyGetFunc through c: a GET through the API
// server's pod proxy (RBAC get pods/proxy). The pod's own answer, of any
// status code, is returned as it came (an error's body as client-go
// keeps it: its text, else "unknown"); an answer the API server gave
// itself (a Status: it refused the request, or could not reach the pod)
// is an *engine.ProxyError.
func PodProxy(c kubernetes.Interface) engine.ProxyGetFunc {
	return func(ctx context.Context, ns, pod, scheme string, port int, path string) (int, []byte, error) {
		rc := c.CoreV1().RESTClient()
		if rc == nil || reflect.ValueOf(rc).IsNil() {
			return 0, nil, errors.New("no client reaches the API server's pod proxy")
		}
		name := pod + ":" + strconv.Itoa(port)
		if scheme == "https" {
			name = "https:" + name
		}
		res := rc.Get().Namespace(ns).Resource("pods").SubResource("proxy").Name(name).Suffix(path).Do(ctx)
		var code int
		res.StatusCode(&code)
		body, err := res.Raw()
		if err == nil {
			return code, body, nil
		}
		var se *apierrors.StatusError
		if !errors.As(res.Error(), &se) {
			// No answer at all (the API server unreachable, the deadline).
			return 0, nil, err
		}
		if d := se.ErrStatus.Details; d != nil {
			for _, c := range d.Causes {
				if c.Type == metav1.CauseTypeUnexpectedServerResponse {
					// Not a Status: the pod's own answer, passed on by
					// the proxy (its body where client-go keeps it, else
					// its text).
					if len(body) == 0 {
						body = []byte(c.Message)
					}
					return int(se.ErrStatus.Code), body, nil
				}
			}
		}
		// A Status: the API server's own answer (it refused the request,
		// or could not reach the pod).
		return 0, nil, &engine.ProxyError{Code: int(se.ErrStatus.Code), Message: se.ErrStatus.Message}
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
