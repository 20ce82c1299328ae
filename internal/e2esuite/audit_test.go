package e2esuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditLog is an audit log as the API server writes it (--audit-log-format
// json, one event a line; fields the reader does not read left out): two
// real writes of hactl's (a Lease renewal and a delete) among requests
// that changed nothing: dry runs (in the query; in the DeleteOptions of
// the body, as client-go sends them), a refused delete, and a stage
// before the answer.
var auditLog = []string{
	// the delete that happened, received last: the reader sorts by receipt
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/pods/db-1","verb":"delete","user":{"username":"kubernetes-admin"},"userAgent":"kubectl-hactl/v0 (linux/amd64) kubernetes/x hactl/h/p/1/aa","objectRef":{"resource":"pods","namespace":"ns","name":"db-1","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u1"}},"requestReceivedTimestamp":"2026-12-02T04:00:09.000000Z","stageTimestamp":"2026-12-02T04:00:09.020000Z"}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a2","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/ns/leases/hactl-db","verb":"update","user":{"username":"kubernetes-admin"},"userAgent":"kubectl-hactl/v0 (linux/amd64) kubernetes/x hactl/h/p/1/aa","objectRef":{"resource":"leases","namespace":"ns","name":"hactl-db","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"hactl-db","namespace":"ns"},"spec":{"holderIdentity":"hactl/h/p/1/aa","leaseDurationSeconds":30}},"requestReceivedTimestamp":"2026-12-02T04:00:01.000000Z","stageTimestamp":"2026-12-02T04:00:01.010000Z"}`,
	// dry run in the query
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a3","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/pods/db-2?dryRun=All","verb":"delete","user":{"username":"kubernetes-admin"},"userAgent":"kubectl-hactl/v0 (linux/amd64) kubernetes/x hactl/h/p/1/aa","objectRef":{"resource":"pods","namespace":"ns","name":"db-2","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u2"}},"requestReceivedTimestamp":"2026-12-02T04:00:02.000000Z","stageTimestamp":"2026-12-02T04:00:02.010000Z"}`,
	// dry run in the body's DeleteOptions (client-go's Delete with
	// DryRun: All), a PVC
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a4","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/persistentvolumeclaims/data-db-2","verb":"delete","user":{"username":"kubernetes-admin"},"userAgent":"kubectl-hactl/v0 (linux/amd64) kubernetes/x hactl/h/p/1/aa","objectRef":{"resource":"persistentvolumeclaims","namespace":"ns","name":"data-db-2","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u3"},"dryRun":["All"]},"requestReceivedTimestamp":"2026-12-02T04:00:03.000000Z","stageTimestamp":"2026-12-02T04:00:03.010000Z"}`,
	// refused: the UID precondition no longer held
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a5","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/pods/db-0","verb":"delete","user":{"username":"kubernetes-admin"},"userAgent":"kubectl-hactl/v0 (linux/amd64) kubernetes/x hactl/h/p/1/aa","objectRef":{"resource":"pods","namespace":"ns","name":"db-0","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"Conflict","code":409},"requestObject":{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u0"}},"requestReceivedTimestamp":"2026-12-02T04:00:04.000000Z","stageTimestamp":"2026-12-02T04:00:04.010000Z"}`,
	// not answered yet (a policy that keeps this stage)
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"a6","stage":"RequestReceived","requestURI":"/api/v1/namespaces/ns/pods/db-0","verb":"delete","user":{"username":"kubernetes-admin"},"userAgent":"kubectl-hactl/v0 (linux/amd64) kubernetes/x hactl/h/p/1/aa","objectRef":{"resource":"pods","namespace":"ns","name":"db-0","apiVersion":"v1"},"requestObject":{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"u0"}},"requestReceivedTimestamp":"2026-12-02T04:00:05.000000Z","stageTimestamp":"2026-12-02T04:00:05.000000Z"}`,
}

func writeAuditLog(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadAuditCountsRealDeletesOnly: of the log's four deletes only the
// one that happened is read (a dry run, in the query or in the body, a
// refused one and an unanswered one are not), and the writes come in the
// order the API server received them.
func TestReadAuditCountsRealDeletesOnly(t *testing.T) {
	events, err := ReadAudit(writeAuditLog(t, auditLog))
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, e := range events {
		if e.Verb == "delete" {
			deleted = append(deleted, e.ObjectRef.Name+" uid "+e.DeletedUID())
		}
	}
	if len(deleted) != 1 || deleted[0] != "db-1 uid u1" {
		t.Errorf("deletes read %q, want only [db-1 uid u1]", deleted)
	}
	if len(events) != 2 || events[0].ObjectRef.Resource != "leases" || events[1].ObjectRef.Name != "db-1" {
		t.Errorf("writes read %v, want the Lease update, then the delete of db-1", events)
	}
}

// TestReadAuditRefusesAGarbledLine: a line that is not an event is an
// error, not a write left out.
func TestReadAuditRefusesAGarbledLine(t *testing.T) {
	if _, err := ReadAudit(writeAuditLog(t, append([]string{auditLog[0]}, `{"kind":"Event","verb":`))); err == nil {
		t.Error("a truncated line read without an error")
	}
}

func TestGuardedLeaseHolderAndDeletedUID(t *testing.T) {
	if !NewAuditEvent(ns, "update", "configmaps", "hactl-"+cluster, "", at(0), "{}").Guarded(ns, cluster) {
		t.Error("the ledger is not guarded")
	}
	if NewAuditEvent(ns, "update", "configmaps", "other", "", at(0), "{}").Guarded(ns, cluster) {
		t.Error("another ConfigMap is guarded")
	}
	if NewAuditEvent("elsewhere", "delete", "pods", cluster+"-1", "", at(0), "{}").Guarded(ns, cluster) {
		t.Error("a pod of another namespace is guarded")
	}
	st := NewAuditEvent(ns, "patch", "pods", cluster+"-0", "", at(0), "{}")
	st.ObjectRef.Subresource = "status"
	if st.Guarded(ns, cluster) {
		t.Error("a status write is guarded")
	}
	if u := NewAuditEvent(ns, "delete", "pods", "x", "", at(0), `{"preconditions":{"uid":"u9","resourceVersion":"3"}}`).DeletedUID(); u != "u9" {
		t.Errorf("uid %q", u)
	}
	if u := NewAuditEvent(ns, "delete", "pods", "x", "", at(0), `{"propagationPolicy":"Background"}`).DeletedUID(); u != "" {
		t.Errorf("uid %q from a delete without preconditions", u)
	}
	if h := lease(holderA, 0).LeaseHolder(); h != holderA {
		t.Errorf("lease holder %q", h)
	}
	gone := NewAuditEvent(ns, "delete", "leases", "hactl-"+cluster, "", at(0), `{"spec":{"holderIdentity":"`+holderA+`"}}`)
	if h := gone.LeaseHolder(); h != "" || lease("", 0).LeaseHolder() != "" {
		t.Errorf("a deleted or released lease left to %q", h)
	}
}

// TestDryRun: a dry run in the query (any verb) or in a delete's body is
// one; a write whose object merely has a dryRun-like field is not.
func TestDryRun(t *testing.T) {
	e := NewAuditEvent(ns, "patch", "pods", "x", "", at(0), `{"metadata":{"labels":{"a":"b"}}}`)
	if e.DryRun() || !e.Happened() {
		t.Error("a patch reads as a dry run")
	}
	e.RequestURI = "/api/v1/namespaces/ns/pods/x?fieldManager=kubectl&dryRun=All"
	if !e.DryRun() || e.Happened() {
		t.Error("a patch with dryRun=All in its query happened")
	}
	e = NewAuditEvent(ns, "create", "configmaps", "x", "", at(0), `{"data":{"dryRun":"All"}}`)
	if e.DryRun() {
		t.Error("a ConfigMap whose data says dryRun reads as a dry run")
	}
	e = NewAuditEvent(ns, "deletecollection", "pods", "", "", at(0), `{"kind":"DeleteOptions","dryRun":["All"]}`)
	if !e.DryRun() {
		t.Error("a deletecollection whose options say dry run happened")
	}
}
