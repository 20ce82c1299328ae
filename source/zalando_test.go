package source

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A StatefulSet laid out by Zalando's operator is known by Spilo's
// SPILO_CONFIGURATION, and carries its postgresql's one status word:
// Running serves, any other word does not, none is no word; a missing or
// unread postgresql says so.
func TestZalandoOperatorFacts(t *testing.T) {
	raw := []byte(`{"items":[
		{"metadata":{"name":"acid-a","namespace":"db"},"status":{"PostgresClusterStatus":"Running"}},
		{"metadata":{"name":"acid-b","namespace":"db"},"status":{"PostgresClusterStatus":"SyncFailed"}},
		{"metadata":{"name":"acid-c","namespace":"db"},"status":{}}]}`)
	cs, err := DecodeZalandoClusters(raw)
	if err != nil || len(cs) != 3 {
		t.Fatalf("decoded %d (%v)", len(cs), err)
	}
	sts := func(name string, env ...string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db"}}
		c := corev1.Container{Name: "postgres"}
		for _, e := range env {
			c.Env = append(c.Env, corev1.EnvVar{Name: e, Value: "x"})
		}
		s.Spec.Template.Spec.Containers = []corev1.Container{c}
		return s
	}
	if IsZalandoStatefulSet(sts("pg", "PATRONI_SCOPE")) || !IsZalandoStatefulSet(sts("acid-a", "SCOPE", "SPILO_CONFIGURATION")) {
		t.Error("only a template with SPILO_CONFIGURATION is the operator's")
	}
	z := &Zalando{Clusters: cs}
	for _, c := range []struct {
		name, status string
		available    *bool
		err          string
	}{
		{"acid-a", "Running", ptrTo(true), ""},
		{"acid-b", "SyncFailed", ptrTo(false), ""},
		{"acid-c", "", nil, ""},
		{"acid-d", "", nil, "no postgresql acid-d"},
	} {
		op := zalandoOperator(z, sts(c.name))
		if op.Kind != "postgresql" || op.Name != c.name || op.Status != c.status || (op.Available == nil) != (c.available == nil) ||
			(op.Available != nil && *op.Available != *c.available) || !strings.Contains(op.Err, c.err) || (c.err == "") != (op.Err == "") {
			t.Errorf("%s: %+v", c.name, op)
		}
	}
	if op := zalandoOperator(&Zalando{Err: errors.New("forbidden")}, sts("acid-a")); op.Err != "forbidden" || op.Available != nil {
		t.Errorf("unread: %+v", op)
	}
	if ZalandoPath("") != "/apis/acid.zalan.do/v1/postgresqls" || ZalandoPath("db") != "/apis/acid.zalan.do/v1/namespaces/db/postgresqls" {
		t.Errorf("paths %q, %q", ZalandoPath(""), ZalandoPath("db"))
	}
	// Read across namespaces (status -A): a postgresql of another
	// namespace is not this StatefulSet's.
	other := sts("acid-a")
	other.Namespace = "elsewhere"
	if op := zalandoOperator(z, other); op.Err == "" {
		t.Errorf("a postgresql of namespace db taken for elsewhere's StatefulSet: %+v", op)
	}
	if zalandoOperator(nil, sts("acid-a")) != nil {
		t.Error("facts of a read that did not happen")
	}
}

func ptrTo[T any](v T) *T { return &v }
