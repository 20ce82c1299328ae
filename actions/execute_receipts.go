package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/model"
)

// This file holds what an execution records: the write-ahead entry
// before each change, the receipt after it (in the ledger, as an Event,
// to the caller), and the notes and warnings it tells the caller.

func stepFences(s model.Step) []model.Fence {
	if s.Fence == nil {
		return nil
	}
	return []model.Fence{*s.Fence}
}

// writeAhead records in the ledger, before a changing request is sent,
// that it is being sent (OutcomeSending), so that a holder killed before
// the answer's receipt still leaves the change on record. Ledger only: the
// receipt of how the step ended follows on screen, in Events and in the
// result. A failed write stops the run before the request.
func (r *run) writeAhead(s model.Step) error {
	if r.entryID == "" || r.o.DryRun != DryRunNone {
		return nil
	}
	key := aheadKey(s)
	if r.ahead == key {
		// a retry of the request already on record (the engine said
		// "not yet"): no receipt since, so the record stands
		return r.mayChange()
	}
	member := r.member(s)
	rc := model.Receipt{
		ActionID: r.entryID, Action: r.confirmed.Intent.Action, Cluster: r.ns + "/" + r.name,
		Member: member, Phase: s.Phase, Step: s.Kind, Outcome: model.OutcomeSending, At: time.Now().UTC(),
		Holder: r.x.identity(), Detail: s.Detail + ": sending", Fences: stepFences(s), MemberID: s.MemberID, PeerURLs: s.PeerURLs, From: s.From, Since: s.Since,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := r.mayChange(); err != nil {
		return err
	}
	if _, err := r.ledger().Append(ctx, r.entryID, rc, model.EntryInProgress); err != nil {
		return fmt.Errorf("the ledger could not record the change before it was sent (%w); stopped so that the ledger keeps telling the truth: run the command again to resume", err)
	}
	r.ahead = key
	return r.mayChange()
}

// aheadKey names one changing request for writeAhead.
func aheadKey(s model.Step) string {
	key := string(s.Kind) + "/" + s.Member + "/" + s.MemberID + "/" + s.From + "/" + strings.Join(s.PeerURLs, ",")
	for _, f := range stepFences(s) {
		key += "/" + f.UID
	}
	return key
}

// receipt records one receipt: ledger (when an entry exists), Event,
// callback, result.
func (r *run) receipt(kind model.StepKind, phase model.ActionPhase, out model.Outcome, detail string, fences []model.Fence, s model.Step) model.Receipt {
	member := r.member(s)
	rc := model.Receipt{
		ActionID: r.entryID, Action: r.confirmed.Intent.Action, Cluster: r.ns + "/" + r.name,
		Member: member, Phase: phase, Step: kind, Outcome: out, At: time.Now().UTC(),
		Holder: r.x.identity(), Detail: detail, Fences: fences, MemberID: s.MemberID, PeerURLs: s.PeerURLs, From: s.From, Since: s.Since,
		Leader: r.cur.Leader,
	}
	if r.o.DryRun != DryRunNone {
		rc.DryRun = string(r.o.DryRun)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// Any receipt ends the write-ahead record's turn as the last word:
	// a retry after it is written ahead again.
	r.ahead = ""
	if r.entryID != "" && r.o.DryRun == DryRunNone {
		state := model.EntryInProgress
		switch {
		case phase == model.ActionPhaseReady || phase == model.ActionPhasePublished:
			state = model.EntryDone
		case phase == model.ActionPhaseFailed:
			state = model.EntryFailed
		}
		var rec model.Receipt
		err := error(nil)
		if r.lock != nil {
			err = r.lock.Valid()
		}
		if err == nil {
			rec, err = r.ledger().Append(ctx, r.entryID, rc, state)
		}
		if err != nil {
			r.unrecorded = err
			r.warn("receipt not recorded in the ledger: %v", err)
		} else {
			rc = rec
		}
	}
	if r.o.DryRun == DryRunNone {
		if err := RecordEvent(ctx, r.x.client(), r.stsRef(), rc); err != nil {
			r.warn("event not recorded: %v", err)
		}
	}
	r.res.Receipts = append(r.res.Receipts, rc)
	if r.o.OnReceipt != nil {
		r.o.OnReceipt(rc)
	}
	return rc
}

// member is who a receipt of step s is about: the intent's member, else
// the step's (an action on the whole cluster), else the run's subject.
func (r *run) member(s model.Step) string {
	switch {
	case r.confirmed.Intent.Member != "":
		return r.confirmed.Intent.Member
	case s.Member != "":
		return s.Member
	}
	return r.subject
}

// lockAction is what the lock's Lease says its holder does.
func (r *run) lockAction() string {
	in := r.confirmed.Intent
	if in.Action == model.ActionSeed {
		return "seed " + in.Options.Generation
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s", in.Action, in.Member))
}

// lockReceipt records that the lock is held.
func (r *run) lockReceipt() {
	detail := fmt.Sprintf("took lease %s/%s as %s", r.ns, LockName(r.name), r.x.identity())
	if r.lock.TookOver != "" {
		detail += fmt.Sprintf("; taken over from stale holder %s (%s)", r.lock.TookOver, r.lock.TookOverWhy)
	}
	r.receipt(model.StepAcquireLock, model.ActionPhaseRequested, model.OutcomeDone, detail, nil, model.Step{})
}

func (r *run) note(format string, args ...any) {
	if r.o.Note != nil {
		r.o.Note(fmt.Sprintf(format, args...))
	}
}

func (r *run) warn(format string, args ...any) {
	if r.o.Warn != nil {
		r.o.Warn(fmt.Sprintf(format, args...))
	}
}

// stsRef is the object the cluster answers to, which its Events are
// about: its StatefulSet, or the operator's resource its layout names
// (model.ClusterFacts.OwnerKind).
func (r *run) stsRef() corev1.ObjectReference {
	c := r.confirmed.Cluster
	kind, apiVersion := c.OwnerKind, c.OwnerAPIVersion
	if kind == "" || apiVersion == "" {
		kind, apiVersion = "StatefulSet", "apps/v1"
	}
	return corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: r.ns, Name: r.name, UID: types.UID(c.UID)}
}

// owner is the owner reference of hactl's lock and ledger: the object
// the cluster answers to, so that they go with it (an owner reference
// naming an object that does not exist makes the garbage collector
// delete the dependent). A decision that names no kind (a plan saved
// before kinds were recorded, when every cluster hactl acted on was a
// StatefulSet's) is its StatefulSet's; none without a UID.
func (r *run) owner() *metav1.OwnerReference {
	c := r.confirmed.Cluster
	if c.UID == "" {
		return nil
	}
	kind, apiVersion := c.OwnerKind, c.OwnerAPIVersion
	if kind == "" || apiVersion == "" {
		kind, apiVersion = "StatefulSet", "apps/v1"
	}
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: r.name, UID: types.UID(c.UID)}
}

func (r *run) ledger() *Ledger {
	return &Ledger{Client: r.x.client(), Namespace: r.ns, Cluster: r.name, Owner: r.owner()}
}
