package source

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
)

// What Zalando's postgres-operator (v1.x, v2.0) writes
// (zalando/postgres-operator pkg/apis/acid.zalan.do/v1 postgresql_type.go
// and const.go; pkg/cluster/k8sres.go for the StatefulSet, named as its
// postgresql, with the operator's cluster labels and Spilo's variables).
const (
	ZalandoGroup   = "acid.zalan.do"
	ZalandoVersion = "v1"
	// ZalandoKind is the kind of the operator's cluster resource.
	ZalandoKind = "postgresql"
	// zalandoRunning is PostgresClusterStatus once the operator has
	// created or synced the cluster without error.
	zalandoRunning = "Running"
)

// ZalandoPath is the API path of the postgresqls in namespace ns ("" for
// every namespace).
func ZalandoPath(ns string) string {
	if ns == "" {
		return "/apis/" + ZalandoGroup + "/" + ZalandoVersion + "/postgresqls"
	}
	return "/apis/" + ZalandoGroup + "/" + ZalandoVersion + "/namespaces/" + ns + "/postgresqls"
}

// ZalandoCluster is the part of a postgresql hactl reads: its name and
// the one status word the operator keeps (Creating, Updating,
// UpdateFailed, SyncFailed, CreateFailed, Running, Invalid).
type ZalandoCluster struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		PostgresClusterStatus string `json:"PostgresClusterStatus"`
	} `json:"status"`
}

// Zalando are the postgresqls one read holds; Err says why they could not
// be read (the clusters are then shown from their StatefulSets alone).
type Zalando struct {
	Clusters []ZalandoCluster
	Err      error
}

// DecodeZalandoClusters decodes a list of postgresqls as the API server
// returns it.
func DecodeZalandoClusters(raw []byte) ([]ZalandoCluster, error) {
	var l struct {
		Items []ZalandoCluster `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decoding postgresqls.%s: %w", ZalandoGroup, err)
	}
	return l.Items, nil
}

// IsZalandoStatefulSet reports whether sts is laid out as Zalando's
// operator lays out a postgresql's: its pod template runs Spilo with the
// operator's SPILO_CONFIGURATION (whatever cluster labels the operator
// was configured with).
func IsZalandoStatefulSet(sts *appsv1.StatefulSet) bool {
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "SPILO_CONFIGURATION" {
				return true
			}
		}
	}
	return false
}

// HasZalandoStatefulSets reports whether sts hold one laid out by
// Zalando's operator.
func HasZalandoStatefulSets(sts []appsv1.StatefulSet) bool {
	for i := range sts {
		if IsZalandoStatefulSet(&sts[i]) {
			return true
		}
	}
	return false
}

// zalandoOperator is what z says of the postgresql named as sts, nil
// when z was not read; a postgresql that is missing is said as such.
func zalandoOperator(z *Zalando, sts *appsv1.StatefulSet) *model.OperatorFacts {
	if z == nil {
		return nil
	}
	op := &model.OperatorFacts{Kind: ZalandoKind, Name: sts.Name, AvailableType: "PostgresClusterStatus"}
	if z.Err != nil {
		op.Err = z.Err.Error()
		return op
	}
	for _, c := range z.Clusters {
		if c.Name != sts.Name || (c.Namespace != "" && c.Namespace != sts.Namespace) {
			continue
		}
		op.Status = c.Status.PostgresClusterStatus
		if op.Status != "" {
			up := op.Status == zalandoRunning
			op.Available = &up
		}
		op.Deleting = c.DeletionTimestamp != nil
		return op
	}
	op.Err = fmt.Sprintf("no postgresql %s in namespace %s (a StatefulSet laid out by Zalando's operator outlives its postgresql, or was made by hand)", sts.Name, sts.Namespace)
	return op
}
