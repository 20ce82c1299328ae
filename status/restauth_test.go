package status_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// ReadRESTAuth reads username and password from the Secret the annotation
// names, and every way that fails says what to do, names the Secret and
// never carries its values.
func TestReadRESTAuth(t *testing.T) {
	const password = "pw-that-must-not-print"
	cl := model.ClusterFacts{Namespace: "db", Name: "pg", RESTAuthSecret: "pg-rest-auth"}
	secret := func(data map[string]string) status.SecretGetter {
		return func(_ context.Context, ns, name string) (*corev1.Secret, error) {
			if ns != "db" || name != "pg-rest-auth" {
				return nil, fmt.Errorf("asked for %s/%s", ns, name)
			}
			s := &corev1.Secret{Data: map[string][]byte{}}
			for k, v := range data {
				s.Data[k] = []byte(v)
			}
			return s, nil
		}
	}
	failing := func(err error) status.SecretGetter {
		return func(context.Context, string, string) (*corev1.Secret, error) { return nil, err }
	}
	gr := schema.GroupResource{Resource: "secrets"}

	a, err := status.ReadRESTAuth(context.Background(), secret(map[string]string{"username": "admin", "password": password}), cl, "act on the members")
	if err != nil || a == nil || a.Username != "admin" || a.Password != password {
		t.Fatalf("ReadRESTAuth: %v, %v", a, err)
	}
	if out := fmt.Sprintf("%v %+v %#v %s", a, a, *a, a); strings.Contains(out, password) {
		t.Fatalf("BasicAuth printed its password: %s", out)
	}
	none := cl
	none.RESTAuthSecret = ""
	if a, err := status.ReadRESTAuth(context.Background(), failing(fmt.Errorf("must not be called")), none, "x"); a != nil || err != nil {
		t.Fatalf("no annotation: %v, %v", a, err)
	}
	for _, c := range []struct {
		name string
		get  status.SecretGetter
		want []string
	}{
		{"forbidden", failing(apierrors.NewForbidden(gr, "pg-rest-auth", fmt.Errorf("no"))), []string{"may not get secret", "pg-rest-auth", status.AnnotationRESTAuthSecret, "act on the members"}},
		{"not found", failing(apierrors.NewNotFound(gr, "pg-rest-auth")), []string{"does not exist", "pg-rest-auth", status.AnnotationRESTAuthSecret}},
		{"no password", secret(map[string]string{"username": "admin"}), []string{"username and password", "pg-rest-auth"}},
		{"no username", secret(map[string]string{"password": password}), []string{"username and password", "pg-rest-auth"}},
		{"no client", nil, []string{"cannot be read", "pg-rest-auth"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := status.ReadRESTAuth(context.Background(), c.get, cl, "act on the members")
			if err == nil || a != nil {
				t.Fatalf("got %v, %v; want an error", a, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("error carries the password: %v", err)
			}
		})
	}
}
