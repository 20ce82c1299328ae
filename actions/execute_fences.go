package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// This file holds the fences of an execution: what is verified before
// the first change (preflight, a server dry run) and how each decision
// made under the lock is held against the confirmed one (verify,
// covered), so that nothing the operator did not confirm is done.

func memberFenceID(d model.Decision) string {
	if d.MemberFence == nil {
		return ""
	}
	return d.MemberFence.ID
}

func verifiedDetail(d model.Decision) string {
	var parts []string
	if mf := d.MemberFence; mf != nil {
		parts = append(parts, fmt.Sprintf("member %s (%s) listed in cluster %s", mf.ID, strings.Join(mf.PeerURLs, ","), mf.ClusterID))
	}
	for _, f := range d.Fences {
		parts = append(parts, fmt.Sprintf("%s %s uid=%s resourceVersion=%s", f.Kind, f.Name, f.UID, f.ResourceVersion))
	}
	if len(parts) == 0 {
		return "re-observed under the lock: the plan is unchanged"
	}
	return "re-observed under the lock, unchanged: " + strings.Join(parts, "; ")
}

// verify holds a fresh decision against the confirmed one: same deletes
// at the same resourceVersions, same member removed, no change the
// confirmed plan did not show.
func verify(confirmed, now model.Decision) error {
	switch now.Verb {
	case model.VerbRefuse:
		return &RefusedError{Decision: now, While: "observed again under the lock"}
	case model.VerbAwait, model.VerbObserve:
		return &FenceConflictError{Detail: fmt.Sprintf("the decision is now %s: %s", now.Verb, firstBlocker(now))}
	}
	var diffs []string
	key := func(f model.Fence) string { return f.Kind + " " + f.Namespace + "/" + f.Name }
	was := map[string]model.Fence{}
	for _, f := range confirmed.Fences {
		was[key(f)] = f
	}
	is := map[string]model.Fence{}
	for _, f := range now.Fences {
		is[key(f)] = f
	}
	for k, f := range was {
		g, ok := is[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s is no longer to be deleted (uid %s)", k, f.UID))
		case g.UID != f.UID:
			diffs = append(diffs, fmt.Sprintf("%s was replaced: uid %s, now %s", k, f.UID, g.UID))
		case g.ResourceVersion != f.ResourceVersion && !statusOnly(f, g):
			diffs = append(diffs, fmt.Sprintf("%s changed: resourceVersion %s, now %s (its labels, annotations, owners or spec changed)", k, f.ResourceVersion, g.ResourceVersion))
		}
	}
	for k, g := range is {
		if _, ok := was[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s (uid %s) would now be deleted too", k, g.UID))
		}
	}
	a, b := confirmed.MemberFence, now.MemberFence
	switch {
	case a == nil && b != nil:
		diffs = append(diffs, fmt.Sprintf("member %s would now be removed too", b.ID))
	case a != nil && b == nil:
		diffs = append(diffs, fmt.Sprintf("member %s is no longer listed", a.ID))
	case a != nil && (a.ID != b.ID || a.ClusterID != b.ClusterID || !slices.Equal(a.PeerURLs, b.PeerURLs)):
		diffs = append(diffs, fmt.Sprintf("member %s (%v) is now %s (%v)", a.ID, a.PeerURLs, b.ID, b.PeerURLs))
	}
	if a, b := scaleFence(confirmed), scaleFence(now); a != nil && b != nil && (a.UID != b.UID || !statusOnly(*a, *b) && a.ResourceVersion != b.ResourceVersion) {
		diffs = append(diffs, fmt.Sprintf("StatefulSet %s/%s changed: uid %s resourceVersion %s, now uid %s resourceVersion %s (its labels, annotations, owners or spec changed)",
			a.Namespace, a.Name, a.UID, a.ResourceVersion, b.UID, b.ResourceVersion))
	}
	for _, s := range now.Steps {
		if err := covered(confirmed, s); err != nil {
			diffs = append(diffs, err.Error())
		}
	}
	// The ledger entries the decision continues and supersedes are part
	// of what was shown: a rerun that would now resume another entry, or
	// supersede one the dialog did not name, is not the confirmed plan.
	if confirmed.Resume != now.Resume {
		diffs = append(diffs, fmt.Sprintf("the decision now resumes ledger entry %s, the confirmed plan resumed %s", orNoEntry(now.Resume), orNoEntry(confirmed.Resume)))
	}
	if !sameSet(confirmed.Supersedes, now.Supersedes) {
		diffs = append(diffs, fmt.Sprintf("the decision now supersedes %v, the confirmed plan superseded %v", now.Supersedes, confirmed.Supersedes))
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return &FenceConflictError{Detail: strings.Join(diffs, "; ")}
	}
	return nil
}

func orNoEntry(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

// promotedSince says how a Patroni pod fence's role label moved to the
// primary's since the plan was confirmed ("" when it did not): the
// fingerprint leaves the role out, and a primary is never deleted or
// reinitialized.
func promotedSince(confirmed, now *model.Fence) string {
	if confirmed == nil || now == nil || confirmed.Role == now.Role || !primaryRole(now.Role) || primaryRole(confirmed.Role) {
		return ""
	}
	return fmt.Sprintf("pod %s is labelled role %q now, %q when the plan was confirmed: Patroni promoted it, and a primary is never deleted or reinitialized", now.Name, now.Role, orNoEntry(confirmed.Role))
}

// primaryRole reports whether a Patroni role label names the primary.
func primaryRole(r string) bool { return r == "master" || r == "primary" }

// scaleFence is the StatefulSet fence of a restore's first scale step.
func scaleFence(d model.Decision) *model.Fence {
	for _, s := range d.Steps {
		if (s.Kind == model.StepScaleDown || s.Kind == model.StepScaleUp) && s.Fence != nil {
			return s.Fence
		}
	}
	return nil
}

// statusOnly reports whether a fenced object moved on only by its status
// (the kubelet reporting a crash-looping container, say): same UID, same
// fingerprint of metadata and spec. Without fingerprints, any new
// resourceVersion counts as a change.
func statusOnly(was, is model.Fence) bool {
	return was.UID == is.UID && was.Fingerprint != "" && was.Fingerprint == is.Fingerprint
}

// statusMoves lists the fenced objects whose status alone moved on since
// the confirmed decision; the deletes use the fresh resourceVersions.
func statusMoves(confirmed, now model.Decision) []string {
	var out []string
	for _, f := range confirmed.Fences {
		for _, g := range now.Fences {
			if f.Kind == g.Kind && f.Name == g.Name && f.ResourceVersion != g.ResourceVersion && statusOnly(f, g) {
				out = append(out, fmt.Sprintf("%s %s: status moved on (resourceVersion %s, now %s; metadata and spec unchanged)", f.Kind, f.Name, f.ResourceVersion, g.ResourceVersion))
			}
		}
	}
	return out
}

// covered reports whether the confirmed plan showed step s.
func covered(confirmed model.Decision, s model.Step) error {
	if !s.Kind.Mutates() {
		return nil
	}
	for _, c := range confirmed.Steps {
		if c.Kind != s.Kind {
			continue
		}
		switch s.Kind {
		case model.StepRemoveMember:
			if confirmed.MemberFence != nil && s.MemberID == confirmed.MemberFence.ID {
				return nil
			}
		case model.StepAddLearner:
			if sameSet(c.PeerURLs, s.PeerURLs) {
				return nil
			}
		case model.StepSwitchover:
			// The same handover: from the same observed primary to the
			// same candidate.
			if c.From == s.From && c.MemberID == s.MemberID {
				return nil
			}
		case model.StepReinitialize:
			// The same member, on the pod as confirmed.
			if c.Member != s.Member || (c.Fence == nil) != (s.Fence == nil) {
				continue
			}
			if c.Fence != nil && (c.Fence.UID != s.Fence.UID || !sameSpec(*c.Fence, *s.Fence)) {
				return fmt.Errorf("pod %s changed since the plan was confirmed (uid %s, now %s; or its labels, annotations, owners or spec): the plan now wants to %s, and only the member as confirmed may be reinitialized",
					s.Fence.Name, c.Fence.UID, s.Fence.UID, s.Detail)
			}
			if why := promotedSince(c.Fence, s.Fence); why != "" {
				return errors.New(why)
			}
			return nil
		case model.StepDeletePod, model.StepDeletePVC, model.StepDeleteRestorePod, model.StepScaleDown, model.StepScaleUp:
			if c.Fence == nil {
				if s.Fence == nil {
					return nil // both plan a restore pod that does not exist yet
				}
				continue // created since the plan was shown: see ownRestorePod
			}
			if s.Fence == nil || c.Fence.UID != s.Fence.UID {
				continue
			}
			if !sameSpec(*c.Fence, *s.Fence) {
				return fmt.Errorf("%s %s/%s changed since the plan was confirmed (its labels, annotations, owners, finalizers or spec; resourceVersion %s, now %s): the plan now wants to %s, and only the object as confirmed may be changed",
					s.Fence.Kind, s.Fence.Namespace, s.Fence.Name, c.Fence.ResourceVersion, s.Fence.ResourceVersion, s.Detail)
			}
			if why := promotedSince(c.Fence, s.Fence); why != "" {
				return errors.New(why)
			}
			return nil
		default:
			return nil
		}
	}
	return fmt.Errorf("the plan now wants to %s, which the confirmed plan did not show", s.Detail)
}

// sameSpec reports whether a fence seen later still denotes the object as
// confirmed: the same metadata and spec (the fingerprint; the same
// resourceVersion where no fingerprint was taken). Status moves are
// allowed.
func sameSpec(confirmed, now model.Fence) bool {
	if confirmed.Fingerprint != "" || now.Fingerprint != "" {
		return confirmed.Fingerprint == now.Fingerprint
	}
	return confirmed.ResourceVersion == now.ResourceVersion
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// serverDryRun sends every delete with the server's dry run (so
// preconditions are checked for real) and reports engine steps.
func (r *run) serverDryRun(ctx context.Context, d model.Decision) error {
	for _, s := range d.Steps {
		switch {
		case d.Intent.Action == model.ActionRestore && s.Kind.Mutates():
			if s.Kind == model.StepDeleteRestorePod && s.Fence == nil {
				r.receipt(s.Kind, s.Kind.PhaseOf(), model.OutcomeDryRun, s.Detail+" (not sent: the pod does not exist yet)", nil, s)
				continue
			}
			out, detail, err := r.restoreStep(ctx, s, true)
			if err != nil {
				return err
			}
			r.receipt(s.Kind, s.Kind.PhaseOf(), out, detail, stepFences(s), s)
			if s.Kind == model.StepScaleDown {
				// Later steps need the world the scale-down makes.
				r.receipt(s.Kind, s.Kind.PhaseOf(), model.OutcomeDryRun, "the steps after the scale-down are checked when they run", nil, s)
				return nil
			}
		case s.Kind == model.StepDeletePVC || s.Kind == model.StepDeletePod:
			out, detail, err := r.deleteObject(ctx, s, true)
			r.receipt(s.Kind, s.Kind.PhaseOf(), out, detail, stepFences(s), s)
			if err != nil {
				return err
			}
		case s.Kind.Mutates():
			r.receipt(s.Kind, s.Kind.PhaseOf(), model.OutcomeDryRun, s.Detail+" (not sent: the engine has no dry run)", nil, s)
		}
	}
	return nil
}

// preflight sends every delete of the plan with the server's dry run
// before the first change: the API server checks the fences and this
// user's permission to delete, so that neither a stale fence nor a missing
// RBAC rule is found only after the member was removed.
func (r *run) preflight(ctx context.Context, d model.Decision) error {
	if d.Intent.Action == model.ActionRestore {
		return r.restorePreflight(ctx, d)
	}
	for _, s := range d.Steps {
		if s.Fence == nil || (s.Kind != model.StepDeletePod && s.Kind != model.StepDeletePVC) {
			continue
		}
		out, _, err := DeleteFenced(ctx, r.x.client(), *s.Fence, true)
		if out == model.OutcomeConflict {
			// Moved on since the decision under the lock (a status
			// update); the loop decides again before deleting.
			continue
		}
		switch {
		case apierrors.IsForbidden(err):
			return fmt.Errorf("%w: you may not delete %s %s/%s; replace and reseed need delete on pods and persistentvolumeclaims (see docs/actions.md); nothing was changed: %v",
				status.ErrForbidden, strings.ToLower(s.Fence.Kind), s.Fence.Namespace, s.Fence.Name, err)
		case err != nil:
			return fmt.Errorf("checking the delete of %s %s before acting (nothing was changed): %w", s.Fence.Kind, s.Fence.Name, err)
		}
	}
	return nil
}
