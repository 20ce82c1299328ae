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
	Kind       GCKind    `json:"kind"`
	Generation string    `json:"generation"`
	Upload     string    `json:"upload,omitempty"`
	Bytes      int64     `json:"bytes"`
	CreatedAt  time.Time `json:"createdAt"`
	Reason     string    `json:"reason"`
}

// GCPlan is what GC will delete and what it keeps.
type GCPlan struct {
	Delete []GCItem `json:"delete"`
	Keep   []GCItem `json:"keep"`
}

// PlanGC decides, from a store listing, what GC deletes. It is pure: the
// newest o.Keep published generations, those younger than o.OlderThan and
// those in o.InUse are kept; every other published generation is deleted;
// uploads no manifest points at are deleted once older than the partial
// age unless their generation is in use; generations with an invalid
// manifest are never deleted.
func PlanGC(entries []Entry, o GCOptions) GCPlan {
	partialAge := o.PartialAge
	if partialAge <= 0 {
		partialAge = DefaultPartialAge
	}
	partialAge = max(partialAge, o.OlderThan)
	var plan GCPlan
	var published []Entry
	for _, e := range entries {
		switch {
		case e.Published():
			published = append(published, e)
		case e.Err != nil && !isNoManifest(e.Err):
			plan.Keep = append(plan.Keep, GCItem{Kind: GCInvalid, Generation: e.Generation, Bytes: uploadBytes(e.Uploads), Reason: "manifest does not validate: " + e.Err.Error()})
		}
		for _, u := range e.Uploads {
			if u.Referenced {
				continue
			}
			item := GCItem{Kind: GCUpload, Generation: e.Generation, Upload: u.ID, Bytes: u.Bytes, CreatedAt: u.LastModified}
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
		item := GCItem{Kind: GCGeneration, Generation: e.Generation, Upload: e.Manifest.Upload, Bytes: e.Manifest.TotalSize, CreatedAt: e.Manifest.CreatedAt}
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

// ApplyGC deletes what plan says, re-checking just before each deletion
// that the generation is not (any longer) in use according to inUse
// (nil: no re-check). It returns the items deleted.
func (s *Store) ApplyGC(ctx context.Context, plan GCPlan, inUse func(generation string) bool) ([]GCItem, error) {
	var done []GCItem
	for _, it := range plan.Delete {
		if inUse != nil && inUse(it.Generation) {
			continue
		}
		var err error
		switch it.Kind {
		case GCGeneration:
			err = s.Delete(ctx, it.Generation)
		case GCUpload:
			err = s.DeleteUpload(ctx, it.Generation, it.Upload)
		default:
			continue
		}
		if err != nil {
			return done, err
		}
		done = append(done, it)
	}
	return done, nil
}
