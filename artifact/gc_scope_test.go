package artifact_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
)

// publishFor publishes generation g as captured from cluster ns/name
// (ns == "": a manifest that names no source), created at t.
func publishFor(t *testing.T, s *artifact.Store, g, ns, name string, created time.Time) {
	t.Helper()
	publishForUID(t, s, g, ns, name, "", created)
}

// leaveUpload writes an unpublished upload of generation g.
func leaveUpload(t *testing.T, s *artifact.Store, g string) {
	t.Helper()
	ctx := context.Background()
	u, err := s.Begin(ctx, g, artifact.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := u.Create(ctx, "snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("partial"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func names(items []artifact.GCItem) string {
	var out []string
	for _, it := range items {
		out = append(out, it.Kind.String()+":"+it.Generation)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func reasonOf(items []artifact.GCItem, kind artifact.GCKind, g string) string {
	for _, it := range items {
		if it.Kind == kind && it.Generation == g {
			return it.Reason
		}
	}
	return ""
}

// One store, two clusters (db/a, db/b), a same-named cluster in another
// namespace (other/a), a manifest naming no source, an unfinished upload
// and a superseded upload inside one of a's generations.
func TestPlanClusterGCScope(t *testing.T) {
	s := openFile(t)
	ctx := deadline(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, g := range []struct{ g, ns, name string }{
		{"a1", "db", "a"}, {"b1", "db", "b"}, {"a2", "db", "a"}, {"b2", "db", "b"}, {"x1", "other", "a"}, {"x2", "other", "a"},
		{"n1", "", ""}, {"n2", "", ""}, {"a3", "db", "a"},
	} {
		publishFor(t, s, g.g, g.ns, g.name, base.Add(time.Duration(i)*time.Hour))
	}
	leaveUpload(t, s, "p1") // no manifest: owner unknown
	leaveUpload(t, s, "a1") // superseded upload inside a's generation
	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Hour) // every upload is older than the partial age
	o := artifact.GCOptions{Keep: 1, PartialAge: time.Minute, Now: now}
	self := artifact.Owner{Namespace: "db", Cluster: "a"}

	plan := artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: self}, o)
	if got := names(plan.Delete); got != "generation:a1,generation:a2,upload:a1" {
		t.Fatalf("default scope deletes %s, want only db/a's a1, a2 and the upload inside a1", got)
	}
	for _, g := range []string{"b1", "b2"} {
		if r := reasonOf(plan.Keep, artifact.GCGeneration, g); r != "belongs to db/b" {
			t.Errorf("%s kept for %q, want belongs to db/b", g, r)
		}
	}
	if r := reasonOf(plan.Keep, artifact.GCGeneration, "x1"); r != "belongs to other/a" {
		t.Errorf("x1 (same name, other namespace) kept for %q", r)
	}
	if r := reasonOf(plan.Keep, artifact.GCUpload, "p1"); !strings.Contains(r, "no manifest") {
		t.Errorf("unfinished upload kept for %q", r)
	}
	if r := reasonOf(plan.Keep, artifact.GCGeneration, "n1"); !strings.Contains(r, "names no source") {
		t.Errorf("sourceless generation kept for %q", r)
	}
	for _, it := range plan.Delete {
		if it.Owner != "db/a" {
			t.Errorf("deleting %+v, not owned by db/a", it)
		}
	}

	plan = artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: self, Unowned: true}, o)
	if got := names(plan.Delete); got != "generation:a1,generation:a2,generation:n1,upload:a1,upload:p1" {
		t.Fatalf("with Unowned: deletes %s", got)
	}
	plan = artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: self, AllClusters: true}, o)
	if got := names(plan.Delete); got != "generation:a1,generation:a2,generation:b1,generation:n1,generation:x1,upload:a1,upload:p1" {
		t.Fatalf("with AllClusters (keep 1 per cluster): deletes %s", got)
	}
	if plan.Delete[0].Owner != "db/a" {
		t.Errorf("this cluster's items are not first: %+v", plan.Delete[0])
	}
}

// An invalid manifest's uploads are never deleted, in any scope.
func TestPlanGCKeepsUploadsOfInvalidManifests(t *testing.T) {
	now := time.Now()
	invalid := artifact.Entry{Generation: "bad", Err: fmt.Errorf("x: %w", artifact.ErrDigestMismatch),
		Uploads: []artifact.UploadInfo{{ID: "u1", Bytes: 10, LastModified: now.Add(-48 * time.Hour)}}}
	for _, scope := range []artifact.GCScope{{}, {Unowned: true}, {AllClusters: true}} {
		plan := artifact.PlanClusterGC([]artifact.Entry{invalid}, scope, artifact.GCOptions{Now: now})
		if len(plan.Delete) != 0 {
			t.Fatalf("scope %+v deletes %+v", scope, plan.Delete)
		}
	}
}

// RunGC asks Continue before every deletion and stops at its first
// error, reporting what it did not delete; a generation whose manifest
// changed since the plan is skipped.
func TestRunGCStopsAndRechecks(t *testing.T) {
	s := openFile(t)
	ctx := deadline(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, g := range []string{"g1", "g2", "g3", "g4", "g5"} {
		publishFor(t, s, g, "db", "a", base.Add(time.Duration(i)*time.Hour))
	}
	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan := artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: artifact.Owner{Namespace: "db", Cluster: "a"}}, artifact.GCOptions{Keep: 1, Now: time.Now()})
	if got := names(plan.Delete); got != "generation:g1,generation:g2,generation:g3,generation:g4" {
		t.Fatalf("plan deletes %s", got)
	}
	// g3 (planned second: newest first) is replaced by another cluster's
	// generation of the same name after the plan.
	if err := s.Delete(ctx, "g3"); err != nil {
		t.Fatal(err)
	}
	publishFor(t, s, "g3", "db", "b", base)
	asked := 0
	lost := errors.New("lock lost")
	res, err := s.RunGC(ctx, plan, artifact.GCApply{Continue: func() error {
		asked++
		if asked == 3 {
			return lost
		}
		return nil
	}})
	if !errors.Is(err, lost) {
		t.Fatalf("RunGC: %v, want the Continue error", err)
	}
	if names(res.Deleted) != "generation:g4" || names(res.Skipped) != "generation:g3" || names(res.NotDone) != "generation:g1,generation:g2" {
		t.Fatalf("deleted %s, skipped %s, not done %s", names(res.Deleted), names(res.Skipped), names(res.NotDone))
	}
	if m, err := s.ReadManifest(ctx, "g3"); err != nil || m.Source.Cluster != "b" {
		t.Fatalf("the other cluster's g3: %v %+v", err, m)
	}
	for _, g := range []string{"g1", "g2", "g5"} {
		if _, err := s.Verify(ctx, g, artifact.Expect{}, nil); err != nil {
			t.Errorf("%s after a stopped GC: %v", g, err)
		}
	}
	if _, err := s.ReadManifest(ctx, "g4"); !errors.Is(err, artifact.ErrNoManifest) {
		t.Errorf("g4 after GC: %v", err)
	}
}

// publishForUID is publishFor with the source StatefulSet's UID recorded.
func publishForUID(t *testing.T, s *artifact.Store, g, ns, name, uid string, created time.Time) {
	t.Helper()
	ctx := context.Background()
	u, err := s.Begin(ctx, g, artifact.UploadOptions{Source: artifact.Source{Namespace: ns, Cluster: name, UID: uid}, Now: created})
	if err != nil {
		t.Fatal(err)
	}
	w, err := u.Create(ctx, "snapshot.db")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte(g))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Publish(ctx, identity(g)); err != nil {
		t.Fatal(err)
	}
}

// Two Kubernetes clusters with a same-named StatefulSet (db/a) sharing a
// store: GC for one never deletes the other's generations, told apart by
// the StatefulSet UID each manifest records. Generations written before
// UIDs were recorded still count as db/a's.
func TestPlanClusterGCTellsSameNamedClustersApart(t *testing.T) {
	s := openFile(t)
	ctx := deadline(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, g := range []struct{ g, uid string }{
		{"old", ""}, {"mine1", "uid-mine"}, {"prod1", "uid-prod"}, {"mine2", "uid-mine"}, {"prod2", "uid-prod"}, {"mine3", "uid-mine"},
	} {
		publishForUID(t, s, g.g, "db", "a", g.uid, base.Add(time.Duration(i)*time.Hour))
	}
	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := artifact.GCOptions{Keep: 1, Now: time.Now()}
	plan := artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: artifact.Owner{Namespace: "db", Cluster: "a", UID: "uid-mine"}}, o)
	if got := names(plan.Delete); got != "generation:mine1,generation:mine2,generation:old" {
		t.Fatalf("deletes %s, want only this StatefulSet's older generations (and the one without a UID)", got)
	}
	if r := reasonOf(plan.Keep, artifact.GCGeneration, "prod1"); !strings.Contains(r, "uid-prod") {
		t.Errorf("prod1 kept for %q, want the other StatefulSet's UID named", r)
	}
	// With the StatefulSet gone (UID unknown), only generations without a
	// UID go by the name.
	plan = artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: artifact.Owner{Namespace: "db", Cluster: "a"}}, o)
	if got := names(plan.Delete); got != "" {
		t.Fatalf("with the StatefulSet gone deletes %s, want nothing (old is the newest without a UID)", got)
	}
	if r := reasonOf(plan.Keep, artifact.GCGeneration, "mine1"); !strings.Contains(r, "StatefulSet is gone") {
		t.Errorf("mine1 kept for %q", r)
	}
	plan = artifact.PlanClusterGC(entries, artifact.GCScope{Cluster: artifact.Owner{Namespace: "db", Cluster: "a", UID: "uid-mine"}, AllClusters: true}, o)
	if got := names(plan.Delete); got != "generation:mine1,generation:mine2,generation:old,generation:prod1" {
		t.Fatalf("with AllClusters deletes %s, want the --keep newest of each StatefulSet kept", got)
	}
}

// The StatefulSet UID is covered by the digest (a manifest whose owner was
// changed no longer verifies); a manifest without one keeps the digest it
// had before the field existed.
func TestDigestCoversTheStatefulSetUID(t *testing.T) {
	m := artifact.Manifest{Version: artifact.ManifestVersion, Kind: artifact.ManifestKind, Source: artifact.Source{Namespace: "db", Cluster: "a"}}
	without := artifact.ComputeDigest(&m)
	m.Source.UID = "uid-1"
	one := artifact.ComputeDigest(&m)
	m.Source.UID = "uid-2"
	two := artifact.ComputeDigest(&m)
	if one == without || one == two {
		t.Fatalf("digests %s %s %s: the UID is not covered", without, one, two)
	}
}
