package actions

import (
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// hactl's lock and ledger are owned by the object the cluster answers
// to, whatever its kind: an owner reference naming a StatefulSet the
// cluster does not have (Crunchy PGO's cluster is its PostgresCluster,
// whose StatefulSets are named per instance) makes the garbage collector
// delete them under a running action; its Events are about that object.
// A decision saved before kinds were recorded (every cluster then was a
// StatefulSet's) keeps the StatefulSet owner; one without a UID gets none.
func TestLockAndLedgerOwnedByTheClustersObject(t *testing.T) {
	pgo := &run{ns: "db", name: "hippo", confirmed: model.Decision{Cluster: model.ClusterRef{Namespace: "db", Name: "hippo", UID: "pc-uid",
		OwnerKind: "PostgresCluster", OwnerAPIVersion: "postgres-operator.crunchydata.com/v1beta1"}}}
	o := pgo.owner()
	if o == nil || o.Kind != "PostgresCluster" || o.APIVersion != "postgres-operator.crunchydata.com/v1beta1" || o.Name != "hippo" || o.UID != "pc-uid" {
		t.Errorf("owner %+v, want the PostgresCluster hippo", o)
	}
	if ref := pgo.stsRef(); ref.Kind != "PostgresCluster" || ref.Name != "hippo" {
		t.Errorf("events about %+v", ref)
	}
	sts := &run{ns: "db", name: "etcd", confirmed: model.Decision{Cluster: model.ClusterRef{Name: "etcd", UID: "sts-uid", OwnerKind: "StatefulSet", OwnerAPIVersion: "apps/v1"}}}
	if o := sts.owner(); o == nil || o.Kind != "StatefulSet" || o.UID != "sts-uid" {
		t.Errorf("owner %+v, want the StatefulSet etcd", o)
	}
	saved := &run{ns: "db", name: "x", confirmed: model.Decision{Cluster: model.ClusterRef{Name: "x", UID: "u"}}}
	if o := saved.owner(); o == nil || o.Kind != "StatefulSet" || o.APIVersion != "apps/v1" || o.UID != "u" {
		t.Errorf("owner %+v of a plan saved before kinds were recorded, want its StatefulSet", o)
	}
	static := &run{ns: "kube-system", name: "etcd", confirmed: model.Decision{Cluster: model.ClusterRef{Name: "etcd"}}}
	if o := static.owner(); o != nil {
		t.Errorf("owner %+v of a cluster of no object", o)
	}
}
