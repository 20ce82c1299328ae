package status

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrForbidden marks an RBAC refusal; the message names the verb and
// resource that are missing.
var ErrForbidden = errors.New("forbidden")

// ErrClusterNotFound is returned when a named cluster does not exist.
var ErrClusterNotFound = errors.New("cluster not found")

// explainAPIError turns an API error into one that says what to do.
func explainAPIError(err error, verb, resource, ns string) error {
	where := fmt.Sprintf("in namespace %q", ns)
	if ns == "" {
		where = "at cluster scope (all namespaces)"
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: you may not %s %s %s; hactl status needs get, list and watch on statefulsets, pods, persistentvolumeclaims, poddisruptionbudgets, services and endpointslices (see docs/rbac.md). The API server said: %v",
			ErrForbidden, verb, resource, where, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authenticated to the API server (check --kubeconfig/--context/--user): %v", err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: the API server does not serve it: %v", verb, resource, err)
	}
	return fmt.Errorf("while trying to %s %s %s: %w", verb, resource, where, err)
}

// explainOperatorRead is explainAPIError for an operator's resources,
// read beside a cluster's own objects: a refusal names the grant that
// shows the operator's word, and the cluster is shown without it.
func explainOperatorRead(err error, resource, ns string) error {
	if !apierrors.IsForbidden(err) {
		return explainAPIError(err, "list", resource, ns)
	}
	where := fmt.Sprintf("in namespace %q", ns)
	if ns == "" {
		where = "at cluster scope (all namespaces)"
	}
	return fmt.Errorf("%w: you may not list %s %s; grant list on it to see the operator's word beside the members' (docs/rbac.md)", ErrForbidden, resource, where)
}

// NotFoundError reports a named cluster that does not exist, listing those
// that do.
type NotFoundError struct {
	Name, Namespace string
	Existing        []string
}

func (e *NotFoundError) Error() string {
	ex := append([]string(nil), e.Existing...)
	sort.Strings(ex)
	if len(ex) == 0 {
		return fmt.Sprintf("no HA cluster %q in namespace %q, and none other either (a cluster is a StatefulSet labelled hactl.dev/engine=<engine> or running etcd); try -n NAMESPACE or -A", e.Name, e.Namespace)
	}
	return fmt.Sprintf("no HA cluster %q in namespace %q; clusters there: %s", e.Name, e.Namespace, strings.Join(ex, ", "))
}

func (e *NotFoundError) Unwrap() error { return ErrClusterNotFound }
