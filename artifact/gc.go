package artifact

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// DefaultPartialAge is how old an unpublished upload must be before GC
// removes it, so that an upload still in progress is never collected.
const DefaultPartialAge = time.Hour

// GCOptions say what GC keeps.
type GCOptions struct {
	// Keep is how many of the newest published generations are always
	// kept.
	Keep int
	// OlderThan: only generations created longer ago than this are
	// deleted (0: any age).
	OlderThan time.Duration
	// PartialAge: uploads no manifest points at are deleted once their
	// newest object is older than this (DefaultPartialAge when zero; it
	// is raised to OlderThan when that is longer).
	PartialAge time.Duration
	// InUse lists generations a running action references: nothing of
	// theirs is deleted.
	InUse map[string]bool
	// Now is the reference time.
	Now time.Time
}

// GCKind says what a GC item is.
type GCKind string

// GC item kinds.
const (
	// GCGeneration is a whole published generation.
	GCGeneration GCKind = "generation"
	// GCUpload is an upload directory no manifest points at (a failed,
	// interrupted or superseded upload).
	GCUpload GCKind = "upload"
	// GCInvalid is a generation whose manifest does not validate; GC
	// never deletes it (inspect it with generations show).
	GCInvalid GCKind = "invalid"
)

func (k GCKind) String() string { return string(k) }

// AllGCKinds lists every GCKind.
var AllGCKinds = []GCKind{GCGeneration, GCUpload, GCInvalid}

// GCItem is one thing GC deletes or keeps, with the reason.
type GCItem struct {
	Kind       GCKind `json:"kind"`
	Generation string `json:"generation"`
	Upload     string `json:"upload,omitempty"`
	// Owner is the cluster ("namespace/name") the item belongs to, ""
	// when nothing proves it (see OwnerOf).
	Owner     string    `json:"owner,omitempty"`
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"createdAt"`
	// Digest is a generation's manifest digest when planned: RunGC
	// deletes the generation only while its manifest still has it.
	Digest string `json:"digest,omitempty"`
	Reason string `json:"reason"`
}

// GCPlan is what GC will delete and what it keeps.
type GCPlan struct {
	Delete []GCItem `json:"delete"`
	Keep   []GCItem `json:"keep"`
}

// Owner is the cluster a generation belongs to: the namespace and name
// of the StatefulSet it was captured from, as its manifest's source
// records them (seed writes them; they are covered by the manifest's
// digest). It is the strongest cluster identity a manifest holds that
// stays the same across a restore: the engine cluster ID changes when a
// cluster is restored, and no Kubernetes UID is recorded.
type Owner struct {
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	// UID is the StatefulSet's UID, "" when unknown (a generation written
	// before UIDs were recorded, or a cluster whose StatefulSet is gone).
	UID string `json:"uid,omitempty"`
}

func (o Owner) String() string { return o.Namespace + "/" + o.Cluster }

// Named reports whether o is the cluster ns/name, whatever its UID.
func (o Owner) Named(other Owner) bool {
	return o.Namespace == other.Namespace && o.Cluster == other.Cluster
}

// Is reports whether a generation owned by o is cluster self's: the same
// name, and the same StatefulSet UID when o records one (a generation
// written before UIDs were recorded goes by its name). A generation that
// records a UID is never self's when self's UID is unknown (its
// StatefulSet is gone): nothing then tells it from another Kubernetes
// cluster's same-named one.
func (o Owner) Is(self Owner) bool {
	return o.Named(self) && (o.UID == "" || o.UID == self.UID)
}

// OwnerOf returns the cluster entry e belongs to. ok is false when nothing
// proves it: no manifest (an unfinished upload), a manifest that does not
// validate, or one whose source names no namespace or cluster.
func OwnerOf(e Entry) (o Owner, ok bool) {
	if !e.Published() {
		return Owner{}, false
	}
	return manifestOwner(e.Manifest)
}

func manifestOwner(m *Manifest) (Owner, bool) {
	if m == nil || m.Source.Namespace == "" || m.Source.Cluster == "" {
		return Owner{}, false
	}
	return Owner{Namespace: m.Source.Namespace, Cluster: m.Source.Cluster, UID: m.Source.UID}, true
}

// GCScope says whose generations a GC may delete.
type GCScope struct {
	// Cluster is the cluster GC runs for: its generations (OwnerOf), and
	// the unreferenced uploads inside them, are candidates.
	Cluster Owner
	// AllClusters makes every cluster's generations candidates, and
	// everything no manifest ties to a cluster (as Unowned); the Keep
	// newest of each cluster are kept. GCOptions.InUse must then hold
	// what every cluster's actions use.
	AllClusters bool
	// Unowned makes generations and uploads whose owner nothing proves
	// candidates, as one more group. Invalid manifests are never deleted.
	Unowned bool
}

// PlanClusterGC is PlanGC restricted to what scope allows: everything
// else is listed as kept, with the cluster it belongs to or why its owner
// is unknown, and never deleted. o.Keep counts per cluster.
func PlanClusterGC(entries []Entry, scope GCScope, o GCOptions) GCPlan {
	groups := map[Owner][]Entry{}
	var unowned, invalid []Entry
	var plan GCPlan
	for _, e := range entries {
		owner, ok := OwnerOf(e)
		if ok && owner.Is(scope.Cluster) {
			owner = scope.Cluster // one group: this cluster's, with or without a recorded UID
		}
		switch {
		case ok && (owner == scope.Cluster || scope.AllClusters):
			groups[owner] = append(groups[owner], e)
		case ok && owner.Named(scope.Cluster) && scope.Cluster.UID == "":
			plan.Keep = append(plan.Keep, keepEntry(e, owner.String()+" (uid "+owner.UID+")", fmt.Sprintf("written by StatefulSet %s uid %s; this cluster's StatefulSet is gone, so nothing tells it from another Kubernetes cluster's same-named one", owner, owner.UID))...)
		case ok && owner.Named(scope.Cluster):
			plan.Keep = append(plan.Keep, keepEntry(e, owner.String()+" (uid "+owner.UID+")", fmt.Sprintf("belongs to another StatefulSet named %s (uid %s; this one is uid %s): another Kubernetes cluster's, or one deleted and created again", owner, owner.UID, scope.Cluster.UID))...)
		case ok:
			plan.Keep = append(plan.Keep, keepEntry(e, owner.String(), "belongs to "+owner.String())...)
		case e.Err != nil && !isNoManifest(e.Err):
			invalid = append(invalid, e) // PlanGC never deletes these
		case scope.Unowned || scope.AllClusters:
			unowned = append(unowned, e)
		case e.Manifest == nil:
			plan.Keep = append(plan.Keep, keepEntry(e, "", "unpublished upload: no manifest says which cluster wrote it")...)
		default:
			plan.Keep = append(plan.Keep, keepEntry(e, "", "its manifest names no source cluster: nothing says whose it is")...)
		}
	}
	owners := make([]Owner, 0, len(groups))
	for ow := range groups {
		owners = append(owners, ow)
	}
	// This cluster's first, then the others by name.
	sort.Slice(owners, func(i, j int) bool {
		a, b := owners[i], owners[j]
		if (a == scope.Cluster) != (b == scope.Cluster) {
			return a == scope.Cluster
		}
		return a.String() < b.String()
	})
	add := func(p GCPlan) {
		plan.Delete = append(plan.Delete, p.Delete...)
		plan.Keep = append(plan.Keep, p.Keep...)
	}
	for _, ow := range owners {
		add(PlanGC(groups[ow], o))
	}
	add(PlanGC(unowned, o))
	add(PlanGC(invalid, o))
	return plan
}

// keepEntry lists everything of e as kept for reason.
func keepEntry(e Entry, owner, reason string) []GCItem {
	var out []GCItem
	if m := e.Manifest; e.Published() {
		out = append(out, GCItem{Kind: GCGeneration, Generation: e.Generation, Upload: m.Upload, Owner: owner, Bytes: m.TotalSize, CreatedAt: m.CreatedAt, Digest: m.Digest, Reason: reason})
	}
	for _, u := range e.Uploads {
		if !u.Referenced {
			out = append(out, GCItem{Kind: GCUpload, Generation: e.Generation, Upload: u.ID, Owner: owner, Bytes: u.Bytes, CreatedAt: u.LastModified, Reason: reason})
		}
	}
	return out
}

// PlanGC decides, from a store listing, what GC deletes. It is pure and
// treats every entry as a candidate (PlanClusterGC restricts it to one
// cluster's): the newest o.Keep published generations, those younger than
// o.OlderThan and those in o.InUse are kept; every other published
// generation is deleted; uploads no manifest points at are deleted once
// older than the partial age unless their generation is in use;
// generations with an invalid manifest, and their uploads, are never
// deleted.
func PlanGC(entries []Entry, o GCOptions) GCPlan {
	partialAge := o.PartialAge
	if partialAge <= 0 {
		partialAge = DefaultPartialAge
	}
	partialAge = max(partialAge, o.OlderThan)
	var plan GCPlan
	var published []Entry
	for _, e := range entries {
		owner := ""
		if ow, ok := OwnerOf(e); ok {
			owner = ow.String()
		}
		switch {
		case e.Published():
			published = append(published, e)
		case e.Err != nil && !isNoManifest(e.Err):
			plan.Keep = append(plan.Keep, GCItem{Kind: GCInvalid, Generation: e.Generation, Bytes: uploadBytes(e.Uploads), Reason: "manifest does not validate: " + e.Err.Error()})
			continue // nothing of it is deleted, its uploads neither
		}
		for _, u := range e.Uploads {
			if u.Referenced {
				continue
			}
			item := GCItem{Kind: GCUpload, Generation: e.Generation, Upload: u.ID, Owner: owner, Bytes: u.Bytes, CreatedAt: u.LastModified}
			age := o.Now.Sub(u.LastModified)
			switch {
			case o.InUse[e.Generation]:
				item.Reason = "generation referenced by a running action"
				plan.Keep = append(plan.Keep, item)
			case age < partialAge:
				item.Reason = fmt.Sprintf("unpublished upload younger than %s (it may still be running)", partialAge)
				plan.Keep = append(plan.Keep, item)
			default:
				item.Reason = "upload never published or superseded"
				plan.Delete = append(plan.Delete, item)
			}
		}
	}
	sort.SliceStable(published, func(i, j int) bool {
		a, b := published[i].Manifest.CreatedAt, published[j].Manifest.CreatedAt
		if !a.Equal(b) {
			return a.After(b)
		}
		return published[i].Generation > published[j].Generation
	})
	for i, e := range published {
		owner := ""
		if ow, ok := OwnerOf(e); ok {
			owner = ow.String()
		}
		item := GCItem{Kind: GCGeneration, Generation: e.Generation, Upload: e.Manifest.Upload, Owner: owner, Bytes: e.Manifest.TotalSize, CreatedAt: e.Manifest.CreatedAt, Digest: e.Manifest.Digest}
		switch {
		case i < o.Keep:
			item.Reason = fmt.Sprintf("among the %d newest", o.Keep)
			plan.Keep = append(plan.Keep, item)
		case o.OlderThan > 0 && o.Now.Sub(e.Manifest.CreatedAt) < o.OlderThan:
			item.Reason = fmt.Sprintf("younger than %s", o.OlderThan)
			plan.Keep = append(plan.Keep, item)
		case o.InUse[e.Generation]:
			item.Reason = "referenced by a running action"
			plan.Keep = append(plan.Keep, item)
		default:
			item.Reason = fmt.Sprintf("beyond the %d newest", o.Keep)
			if o.OlderThan > 0 {
				item.Reason += fmt.Sprintf(" and older than %s", o.OlderThan)
			}
			plan.Delete = append(plan.Delete, item)
		}
	}
	return plan
}

func isNoManifest(err error) bool { return err != nil && errors.Is(err, ErrNoManifest) }

func uploadBytes(us []UploadInfo) int64 {
	var n int64
	for _, u := range us {
		n += u.Bytes
	}
	return n
}

// GCApply says how RunGC proceeds.
type GCApply struct {
	// InUse re-checks, just before each deletion, that the generation is
	// not (any longer) in use (nil: no re-check).
	InUse func(generation string) bool
	// Continue is asked just before each deletion, after the previous one
	// finished: an error stops GC there (the caller's lock was lost) and
	// RunGC returns it, with the items not deleted in GCResult.NotDone.
	Continue func() error
}

// GCResult is what RunGC did with a plan's deletions.
type GCResult struct {
	Deleted []GCItem `json:"deleted"`
	// Skipped were planned but not deleted because they changed since
	// the plan (their Reason says how).
	Skipped []GCItem `json:"skipped"`
	// NotDone were never attempted: GC stopped or failed before them.
	NotDone []GCItem `json:"notDeleted"`
}

// ApplyGC deletes what plan says, re-checking just before each deletion
// that the generation is not (any longer) in use according to inUse
// (nil: no re-check). It returns the items deleted.
func (s *Store) ApplyGC(ctx context.Context, plan GCPlan, inUse func(generation string) bool) ([]GCItem, error) {
	r, err := s.RunGC(ctx, plan, GCApply{InUse: inUse})
	return r.Deleted, err
}

// RunGC deletes what plan says, one item at a time. Before each one it
// asks a.Continue (and stops when it says so), re-checks a.InUse, and
// re-reads the generation's manifest: a generation whose manifest is no
// longer the planned one, and an upload whose generation now belongs to
// another cluster or was published from it, are skipped. An item once
// begun is finished (a generation loses its manifest first, then its
// files), so a stop never leaves a half-deleted generation published.
func (s *Store) RunGC(ctx context.Context, plan GCPlan, a GCApply) (GCResult, error) {
	var r GCResult
	for i, it := range plan.Delete {
		if it.Kind != GCGeneration && it.Kind != GCUpload {
			continue
		}
		if a.Continue != nil {
			if err := a.Continue(); err != nil {
				r.NotDone = append(r.NotDone, plan.Delete[i:]...)
				return r, err
			}
		}
		if a.InUse != nil && a.InUse(it.Generation) {
			it.Reason = "now referenced by a running action"
			r.Skipped = append(r.Skipped, it)
			continue
		}
		why, err := s.changedSincePlan(ctx, it)
		if err == nil && why == "" {
			if it.Kind == GCGeneration {
				err = s.Delete(ctx, it.Generation)
			} else {
				err = s.DeleteUpload(ctx, it.Generation, it.Upload)
			}
		}
		if err != nil {
			r.NotDone = append(r.NotDone, plan.Delete[i:]...)
			return r, err
		}
		if why != "" {
			it.Reason = why
			r.Skipped = append(r.Skipped, it)
			continue
		}
		r.Deleted = append(r.Deleted, it)
	}
	return r, nil
}

// changedSincePlan says why it may no longer be deleted, "" when it may.
func (s *Store) changedSincePlan(ctx context.Context, it GCItem) (string, error) {
	m, err := s.ReadManifest(ctx, it.Generation)
	if err != nil && !isContentError(err) {
		return "", err
	}
	if err != nil {
		m = nil
	}
	if it.Kind == GCGeneration {
		switch {
		case it.Digest == "":
			return "", nil
		case m == nil:
			return "its manifest is gone or no longer validates since the plan", nil
		case m.Digest != it.Digest:
			return fmt.Sprintf("its manifest changed since the plan (now %s)", m.Digest), nil
		}
		return "", nil
	}
	if m == nil {
		return "", nil
	}
	if m.Upload == it.Upload {
		return "published since the plan", nil
	}
	owner := ""
	if ow, ok := manifestOwner(m); ok {
		owner = ow.String()
	}
	if owner != it.Owner {
		return fmt.Sprintf("its generation was published since the plan by %s", orUnknown(owner)), nil
	}
	return "", nil
}

func orUnknown(owner string) string {
	if owner == "" {
		return "an unknown cluster"
	}
	return owner
}
