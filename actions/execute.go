package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// Defaults of Executor.
const (
	DefaultPollInterval = time.Second
	DefaultWaitTimeout  = 10 * time.Minute
	// DefaultMaxConflicts is how many precondition conflicts on one
	// object the executor re-observes through before it gives up.
	DefaultMaxConflicts = 3
	// DefaultRefuseGrace is how long a refusal that appears after the
	// action changed something (a leader election, a member list in
	// flux) is observed before the executor stops.
	DefaultRefuseGrace = 30 * time.Second
)

// DryRun is kubectl's --dry-run.
type DryRun string

// Dry-run modes.
const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

func (d DryRun) String() string { return string(d) }

// Executor runs decisions against a cluster.
type Executor struct {
	Observer *Observer
	// Members changes engine membership; nil means etcd through
	// Observer.Dial with the cluster's TLS Secret.
	Members MemberOps
	// Identity is this process's lock holder identity (NewIdentity when
	// empty).
	Identity     string
	LockDuration time.Duration
	PollInterval time.Duration
	WaitTimeout  time.Duration
	MaxConflicts int
	RefuseGrace  time.Duration
	// Plan, when set, is a saved plan being applied (kubectl hactl
	// apply): the decision made under the lock must not differ from it
	// (PlanDiff), or the run stops with a *PlanConflictError before
	// anything changes.
	Plan *classify.Decision
}

// ExecOptions tune one Execute call.
type ExecOptions struct {
	DryRun DryRun
	// OnReceipt receives every receipt as it is recorded.
	OnReceipt func(model.Receipt)
	// OnDecision receives every re-classification while the action runs
	// (for progress views).
	OnDecision func(classify.Decision)
	// Warn receives non-fatal problems (an Event not written, …).
	Warn func(string)
	// Note receives what the action is doing between receipts (a capture
	// pod created, adopted or deleted); may be nil.
	Note func(string)
	// Seed tunes a seed's capture (its store, timeout and progress).
	Seed SeedExec
}

// Result is what an execution did.
type Result struct {
	// EntryID is the ledger entry (empty for dry runs).
	EntryID  string
	Receipts []model.Receipt
	// Final is the last decision (VerbDone when the action finished).
	Final classify.Decision
	// TookOverFrom names the stale lock holder that was replaced.
	TookOverFrom string
	// Source is the member a seed captured from; Manifest the generation
	// it published (Already when it had been published before).
	Source   string
	Manifest *artifact.Manifest
	Already  bool
}

func (x *Executor) client() kubernetes.Interface { return x.Observer.Client }

func (x *Executor) identity() string {
	if x.Identity == "" {
		x.Identity = NewIdentity()
	}
	return x.Identity
}

func orDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Decide observes the cluster and classifies intent, as this executor
// would (its own lock does not block it).
// A seed intent that names no store gets the one the StatefulSet's
// annotations name; a restore intent that carries no generation facts is
// pinned to the generation as that store holds it now, and its agent
// image's tag to the digest its registry names now (when it answers).
func (x *Executor) Decide(ctx context.Context, namespace, name string, in classify.Intent) (classify.Decision, status.Result, status.Warnings, error) {
	in.Options.LockHolder = x.identity()
	if in.Action == model.ActionSeed && in.Options.SeedStore == "" {
		cs, err := OpenClusterStore(ctx, x.client(), namespace, name, StoreRef{}, StoreOpen{NeedStatefulSet: true})
		if err != nil {
			return classify.Decision{}, status.Result{}, nil, err
		}
		in.Options.SeedStore = cs.Store.String()
		_ = cs.Store.Close()
	}
	if in.Action == model.ActionRestore && in.Options.Source == nil && in.Options.Generation != "" {
		src, err := ReadRestoreSource(ctx, x.client(), namespace, name, in.Options.Generation, StoreRef{})
		if err != nil {
			return classify.Decision{}, status.Result{}, nil, err
		}
		src.Pin(&in.Options)
		if pinned, err := ResolveAgentImage(ctx, in.Options.AgentImage); err == nil {
			in.Options.AgentImage = pinned
		}
	}
	return x.Observer.Decide(ctx, namespace, name, in)
}

// Execute carries out d, the decision the operator confirmed:
//
//  1. take the lock (ErrLockHeld if another live action holds it);
//  2. observe again and classify again under the lock; unless the new
//     decision deletes exactly the objects d showed, at the same
//     resourceVersions, and removes the same member, stop with
//     ErrFenceConflict before changing anything;
//  3. record a ledger entry, then repeatedly run the first step of the
//     current decision and re-observe, re-classify: a step the confirmed
//     plan did not show stops the action (ErrFenceConflict), a delete that
//     fails its precondition is never retried as such (the next
//     observation decides), a wait polls until the world moves on;
//  4. when the classifier says done, record ready and release the lock.
//
// Every step writes a receipt to the ledger and an Event on the
// StatefulSet. After a crash anywhere, deciding and executing the same
// intent again resumes from what is observed.
func (x *Executor) Execute(ctx context.Context, d classify.Decision, o ExecOptions) (Result, error) {
	r := &run{x: x, o: o, confirmed: d, cur: d, ns: d.Cluster.Namespace, name: d.Cluster.Name,
		conflicts: map[string]int{}, notYet: map[model.StepKind]time.Time{}, unknown: map[model.StepKind]int{}}
	r.res.Final = d
	if o.DryRun == "" {
		r.o.DryRun = DryRunNone
	}
	switch d.Verb {
	case classify.VerbRefuse:
		return r.res, &RefusedError{Decision: d}
	case classify.VerbAwait, classify.VerbObserve:
		return r.res, fmt.Errorf("%w: the decision is %s (%s)", ErrNotActionable, d.Verb, firstBlocker(d))
	}
	if d.Intent.Action == model.ActionSeed && r.o.DryRun == DryRunServer {
		return r.res, fmt.Errorf("%w: a seed has no server dry run (nothing it changes goes through the API server); use the client dry run", ErrUnsupported)
	}
	if r.o.DryRun == DryRunClient {
		for _, s := range d.Steps {
			r.receipt(s.Kind, s.Kind.PhaseOf(), model.OutcomeDryRun, s.Detail+" (dry run)", stepFences(s), s)
		}
		return r.res, nil
	}
	return r.execute(ctx)
}

func firstBlocker(d classify.Decision) string {
	if len(d.Blockers) == 0 {
		return ""
	}
	return d.Blockers[0].Detail
}

// run is one execution.
type run struct {
	x         *Executor
	o         ExecOptions
	confirmed classify.Decision
	cur       classify.Decision
	last      status.Result
	ns, name  string
	lock      *Lock
	ops       MemberOps
	// sends guards the dial ops were built with (nil for member
	// operations handed to the Executor).
	sends     *sendGuard
	entryID   string
	mutated   bool
	conflicts map[string]int
	// notYet remembers since when the engine refused a step for now.
	notYet map[model.StepKind]time.Time
	// unknown counts the unanswered requests of each step kind.
	unknown map[model.StepKind]int
	// unrecorded is the last receipt the ledger could not record: no
	// further change is made until the ledger tells the truth again.
	unrecorded error
	// ahead names the changing request writeAhead last recorded as
	// being sent, until a receipt of its step says how it ended.
	ahead string
	// subject is the member an action on the whole cluster is about (a
	// seed's source), for receipts that name no member of their own.
	subject string
	res     Result
}

// ownRestorePod reports whether s deletes a restore pod this action
// created (its run-restore receipt is recorded): the confirmed plan showed
// its delete before the pod existed. Any other restore pod (a leftover of
// another action) needs a fence the operator confirmed.
func (r *run) ownRestorePod(s classify.Step) bool {
	if s.Kind != model.StepDeleteRestorePod || s.Member == "" {
		return false
	}
	created := func(rc model.Receipt) bool {
		return rc.Step == model.StepRunRestore && rc.Member == s.Member && (rc.Outcome == model.OutcomeDone || rc.Outcome == model.OutcomeAlready) && rc.DryRun == ""
	}
	if slices.ContainsFunc(r.res.Receipts, created) {
		return true
	}
	for _, e := range r.last.Observation.Ledger {
		if e.ID == r.entryID && slices.ContainsFunc(e.Receipts, created) {
			return true
		}
	}
	return false
}

// isAPIWrite reports whether a step kind is a change sent to the API
// server (rather than to the engine).
func isAPIWrite(k model.StepKind) bool {
	switch k {
	case model.StepDeletePVC, model.StepDeletePod, model.StepScaleDown, model.StepScaleUp, model.StepRunRestore, model.StepDeleteRestorePod:
		return true
	}
	return false
}

// apiAnswered reports whether err is the API server's own answer to a
// request (a refusal it decided on), rather than a timeout, a broken
// connection or a server error after which the request may have been
// committed.
func apiAnswered(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return false
	}
	return st.Status().Code < 500
}

// maxUnknown bounds the unanswered requests of one step kind before the
// run stops (the entry stays in progress: a rerun resumes).
const maxUnknown = 3

// mayChange reports whether this run may make a change now: it holds the
// lock (renewed within its deadline) and the ledger recorded every
// receipt so far.
func (r *run) mayChange() error {
	if r.lock != nil {
		if err := r.lock.Valid(); err != nil {
			return err
		}
	}
	if r.unrecorded != nil {
		return fmt.Errorf("the ledger did not record the previous step (%v); stopped before the next change so that the ledger keeps telling the truth: run the command again to resume", r.unrecorded)
	}
	return nil
}

// undone refuses a scale-down that this action already made and someone
// else undid (a GitOps controller putting replicas back mid-restore):
// scaling down again would fight it.
func (r *run) undone(s classify.Step) error {
	if s.Kind != model.StepScaleDown {
		return nil
	}
	done := slices.ContainsFunc(r.res.Receipts, func(rc model.Receipt) bool {
		return rc.Step == model.StepScaleDown && rc.Outcome == model.OutcomeDone && rc.DryRun == ""
	})
	for _, e := range r.last.Observation.Ledger {
		if e.ID == r.entryID && slices.ContainsFunc(e.Receipts, func(rc model.Receipt) bool {
			return rc.Step == model.StepScaleDown && rc.Outcome == model.OutcomeDone
		}) {
			done = true
		}
	}
	if !done {
		return nil
	}
	return &FenceConflictError{Detail: fmt.Sprintf("StatefulSet %s/%s wants %d replicas again after this restore scaled it to 0: someone else scaled it back (a GitOps controller?); hactl does not fight it. Pause that controller, then run the command again to resume",
		r.ns, r.name, r.last.Observation.Cluster.Replicas)}
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

func (r *run) stsRef() corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "StatefulSet", APIVersion: "apps/v1", Namespace: r.ns, Name: r.name, UID: types.UID(r.confirmed.Cluster.UID)}
}

func (r *run) owner() *metav1.OwnerReference {
	if r.confirmed.Cluster.UID == "" {
		return nil
	}
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: r.name, UID: types.UID(r.confirmed.Cluster.UID)}
}

func (r *run) ledger() *Ledger {
	return &Ledger{Client: r.x.client(), Namespace: r.ns, Cluster: r.name, Owner: r.owner()}
}

func stepFences(s classify.Step) []model.Fence {
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
func (r *run) writeAhead(s classify.Step) error {
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
func aheadKey(s classify.Step) string {
	key := string(s.Kind) + "/" + s.Member + "/" + s.MemberID + "/" + s.From + "/" + strings.Join(s.PeerURLs, ",")
	for _, f := range stepFences(s) {
		key += "/" + f.UID
	}
	return key
}

// receipt records one receipt: ledger (when an entry exists), Event,
// callback, result.
func (r *run) receipt(kind model.StepKind, phase model.ActionPhase, out model.Outcome, detail string, fences []model.Fence, s classify.Step) model.Receipt {
	member := r.member(s)
	rc := model.Receipt{
		ActionID: r.entryID, Action: r.confirmed.Intent.Action, Cluster: r.ns + "/" + r.name,
		Member: member, Phase: phase, Step: kind, Outcome: out, At: time.Now().UTC(),
		Holder: r.x.identity(), Detail: detail, Fences: fences, MemberID: s.MemberID, PeerURLs: s.PeerURLs, From: s.From, Since: s.Since,
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
func (r *run) member(s classify.Step) string {
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

// execute runs the confirmed decision under the cluster's lock.
func (r *run) execute(ctx context.Context) (Result, error) {
	x := r.x
	err := WithLock(ctx, x.client(), r.ns, r.name, LockOptions{
		Identity: x.identity(), Duration: x.LockDuration, Action: r.lockAction(), Owner: r.owner(),
		DryRun: r.o.DryRun == DryRunServer, OnWait: func(m string) { r.warn("%s", m) }, Warn: func(m string) { r.warn("%s", m) },
	}, func(ctx context.Context, lock *Lock) error {
		r.lock = lock
		r.res.TookOverFrom = lock.TookOver
		if r.confirmed.Intent.Action == model.ActionSeed {
			return r.seed(ctx)
		}
		return r.underLock(ctx)
	})
	return r.res, err
}

// lockReceipt records that the lock is held.
func (r *run) lockReceipt() {
	detail := fmt.Sprintf("took lease %s/%s as %s", r.ns, LockName(r.name), r.x.identity())
	if r.lock.TookOver != "" {
		detail += fmt.Sprintf("; taken over from stale holder %s (%s)", r.lock.TookOver, r.lock.TookOverWhy)
	}
	r.receipt(model.StepAcquireLock, model.ActionPhaseRequested, model.OutcomeDone, detail, nil, classify.Step{})
}

// underLock decides again under the lock, holds the new decision against
// the confirmed one, records the ledger entry and runs the steps.
func (r *run) underLock(ctx context.Context) error {
	// Decide again under the lock and hold that against what was shown.
	d2, err := r.decide(ctx)
	if err != nil {
		return err
	}
	if err := r.checkPlan(d2); err != nil {
		return err
	}
	if err := verify(r.confirmed, d2); err != nil {
		return err
	}
	if r.o.DryRun == DryRunServer {
		return r.serverDryRun(ctx, d2)
	}
	if err := r.preflight(ctx, d2); err != nil {
		return err
	}
	if err := r.mayChange(); err != nil {
		return err
	}
	if err := r.begin(ctx, d2); err != nil {
		return err
	}
	r.lockReceipt()
	detail := verifiedDetail(d2)
	if moved := statusMoves(r.confirmed, d2); len(moved) > 0 {
		detail += "; " + strings.Join(moved, "; ")
	}
	r.receipt(model.StepVerifyFences, model.ActionPhaseFencing, model.OutcomeDone, detail, d2.Fences, classify.Step{MemberID: memberFenceID(d2)})
	if id := r.last.Analysis.ClusterID; id != "" {
		if err := r.ledger().RecordClusterID(ctx, id); err != nil {
			r.warn("cluster ID not recorded: %v", err)
		}
	}
	_, err = r.loop(ctx)
	return err
}

func memberFenceID(d classify.Decision) string {
	if d.MemberFence == nil {
		return ""
	}
	return d.MemberFence.ID
}

func verifiedDetail(d classify.Decision) string {
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

// begin records the ledger entry (new, or the one resumed) before the
// first change.
func (r *run) begin(ctx context.Context, d classify.Decision) error {
	at := time.Now().UTC()
	e := model.LedgerEntry{
		ID: d.Resume, Action: d.Intent.Action, Member: d.Intent.Member, Holder: r.x.identity(),
		Phase: model.ActionPhaseRequested, Replaced: d.Replaced,
	}
	if d.Intent.Action == model.ActionSeed {
		e.Generation = d.Intent.Options.Generation
	}
	if d.Intent.Action == model.ActionRestore {
		e.Generation, e.Replicas = d.Intent.Options.Generation, d.Replicas
		if e.Replicas <= 0 {
			e.Replicas = r.last.Observation.Cluster.Replicas
		}
		if src := d.Intent.Options.Source; src != nil {
			e.FromClusterID, e.Digest = src.ClusterID, src.Digest
		}
	}
	if e.ID == "" {
		e.ID = NewEntryID(d.Intent.Action, r.member(classify.Step{}), at)
	} else {
		r.mutated = true // an earlier run may have changed things
	}
	got, err := r.ledger().Begin(ctx, e, d.Supersedes, at)
	if err != nil {
		return fmt.Errorf("recording the action in the ledger (nothing was changed): %w", err)
	}
	r.entryID = got.ID
	r.res.EntryID = got.ID
	return nil
}

// decide observes and classifies under this run's identity.
func (r *run) decide(ctx context.Context) (classify.Decision, error) {
	in := r.confirmed.Intent
	d, res, warn, err := r.x.Decide(ctx, r.ns, r.name, in)
	for _, w := range warn {
		r.warn("%s", w)
	}
	if err != nil {
		return d, fmt.Errorf("observing %s/%s: %w", r.ns, r.name, err)
	}
	r.last = res
	r.cur = d
	r.res.Final = d
	if r.o.OnDecision != nil {
		r.o.OnDecision(d)
	}
	return d, nil
}

// verify holds a fresh decision against the confirmed one: same deletes
// at the same resourceVersions, same member removed, no change the
// confirmed plan did not show.
func verify(confirmed, now classify.Decision) error {
	switch now.Verb {
	case classify.VerbRefuse:
		return &RefusedError{Decision: now, While: "observed again under the lock"}
	case classify.VerbAwait, classify.VerbObserve:
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
func scaleFence(d classify.Decision) *model.Fence {
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
func statusMoves(confirmed, now classify.Decision) []string {
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
func covered(confirmed classify.Decision, s classify.Step) error {
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
func (r *run) serverDryRun(ctx context.Context, d classify.Decision) error {
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
func (r *run) preflight(ctx context.Context, d classify.Decision) error {
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

// loop runs the current decision's first step, re-decides, until done.
func (r *run) loop(ctx context.Context) (Result, error) {
	refusedSince := time.Time{}
	for {
		if err := ctx.Err(); err != nil {
			return r.res, r.stop(fmt.Errorf("stopped: %w", err))
		}
		d := r.cur
		switch d.Verb {
		case classify.VerbDone:
			r.done(ctx, d)
			return r.res, nil
		case classify.VerbRefuse, classify.VerbAwait, classify.VerbObserve:
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			if err := r.refused(ctx, d, refusedSince); err != nil {
				return r.res, r.stop(err)
			}
			continue
		}
		refusedSince = time.Time{}
		if err := r.next(ctx, d); err != nil {
			return r.res, r.stop(err)
		}
	}
}

// done records the end of an action the classifier says is done.
func (r *run) done(ctx context.Context, d classify.Decision) {
	detail := fmt.Sprintf("%s is ready: %s; lock released", d.Intent.Member, classify.ReadyMeaning(d))
	if d.Intent.Action == model.ActionSwitchover {
		detail = fmt.Sprintf("%s is the writable primary, as the members themselves answer; lock released", d.Leader)
	}
	if d.Intent.Action == model.ActionRestore {
		id := r.last.Analysis.ClusterID
		detail = fmt.Sprintf("restored from generation %s: every member a healthy voter of cluster %s; lock released", d.Intent.Options.Generation, id)
		if id != "" {
			if err := r.ledger().RecordClusterID(ctx, id); err != nil {
				r.warn("cluster ID not recorded: %v", err)
			}
		}
	}
	r.receipt(model.StepReleaseLock, model.ActionPhaseReady, model.OutcomeDone, detail, nil, classify.Step{})
}

// refused handles a decision that refuses (or awaits, or observes) while
// the action runs: before any change, or past the grace a change in
// flight may cause (a leader election), it stops; else it observes again.
func (r *run) refused(ctx context.Context, d classify.Decision, since time.Time) error {
	if !r.mutated || time.Since(since) > orDur(r.x.RefuseGrace, DefaultRefuseGrace) {
		err := error(&RefusedError{Decision: d, While: "while the action ran"})
		if d.Verb != classify.VerbRefuse {
			err = &FenceConflictError{Detail: fmt.Sprintf("the decision became %s: %s", d.Verb, firstBlocker(d))}
		}
		r.receipt(model.StepVerifyFences, d.Phase, model.OutcomeRefused, err.Error(), nil, classify.Step{})
		return err
	}
	if err := r.pause(ctx); err != nil {
		return err
	}
	_, err := r.decide(ctx)
	return err
}

// next carries out the first step of d (a wait, or one change), then
// observes and decides again.
func (r *run) next(ctx context.Context, d classify.Decision) error {
	s, _ := d.Next()
	if !s.Kind.Mutates() {
		return r.wait(ctx, s)
	}
	if usesMemberOps(s.Kind) {
		// Credentials are read (and may fail) before anything is
		// written ahead: a request never sent is never "sending".
		if _, err := r.memberOps(ctx); err != nil {
			r.receipt(s.Kind, s.Phase, model.OutcomeRefused, fmt.Sprintf("%s: not sent: %v", s.Detail, err), stepFences(s), s)
			return fmt.Errorf("%s: %w", s.Detail, err)
		}
	}
	if err := r.mayRun(s); err != nil {
		return err
	}
	out, detail, err := r.do(ctx, s)
	if errors.Is(err, ErrLockLost) {
		// refused by the transport guard before it left the process
		r.receipt(s.Kind, s.Phase, model.OutcomeRefused, fmt.Sprintf("%s: not sent: %v", s.Detail, err), stepFences(s), s)
		return err
	}
	if err != nil && !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrNotYet) && !apiAnswered(err) && isAPIWrite(s.Kind) {
		err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	if !errors.Is(err, ErrNotYet) {
		delete(r.notYet, s.Kind)
	}
	if errors.Is(err, engine.ErrPrecondition) && r.sentUnanswered(s.Kind) {
		// Refused now, but an earlier request of this action went
		// unanswered: it may be what changed the world (Patroni's 412
		// after our own switchover took effect). Observe; never report
		// "nothing changed".
		err = fmt.Errorf("%w: refused now, but an earlier %s request of this action went unanswered and may have taken effect: %w", ErrOutcomeUnknown, s.Kind, err)
	}
	switch {
	case errors.Is(err, engine.ErrPrecondition):
		// The engine refused: the world is not as observed (Patroni's
		// 412: another member leads). Nothing was changed by it.
		ferr := &FenceConflictError{Detail: fmt.Sprintf("%s: the engine refused it, the cluster is not as observed: %v", s.Detail, err)}
		r.receipt(s.Kind, s.Phase, model.OutcomeConflict, ferr.Error(), stepFences(s), s)
		return ferr
	case errors.Is(err, ErrOutcomeUnknown):
		return r.unanswered(ctx, s, err)
	case errors.Is(err, ErrNotYet):
		if err := r.notYetAgain(ctx, s, err); err != nil {
			return err
		}
	case err != nil:
		r.receipt(s.Kind, s.Phase, model.OutcomeFailed, fmt.Sprintf("%s: %v", s.Detail, err), stepFences(s), s)
		return fmt.Errorf("%s: %w", s.Detail, err)
	default:
		r.receipt(s.Kind, s.Phase, out, detail, stepFences(s), s)
		if out == model.OutcomeDone {
			r.mutated = true
		}
	}
	prev := d.Steps[1:]
	nd, derr := r.decide(ctx)
	if derr != nil {
		return derr
	}
	if err == nil && out != model.OutcomeConflict && nd.Verb != classify.VerbRefuse {
		r.passWaits(prev, nd, "already so when observed next")
	}
	if err == nil && out == model.OutcomeConflict {
		return r.countConflict(*s.Fence)
	}
	return nil
}

// mayRun checks, right before changing step s, that the confirmed plan
// showed it, that nobody undid this action's scale-down, that the lock
// is held and the ledger truthful, and writes the change ahead to the
// ledger. A refusal is recorded as the step's receipt.
func (r *run) mayRun(s classify.Step) error {
	if err := covered(r.confirmed, s); err != nil && !r.ownRestorePod(s) {
		ferr := &FenceConflictError{Detail: err.Error()}
		r.receipt(s.Kind, s.Phase, model.OutcomeConflict, ferr.Error(), stepFences(s), s)
		return ferr
	}
	if err := r.undone(s); err != nil {
		r.receipt(s.Kind, s.Phase, model.OutcomeConflict, err.Error(), stepFences(s), s)
		return err
	}
	err := r.mayChange()
	if err == nil {
		err = r.writeAhead(s)
	}
	if err != nil {
		r.receipt(s.Kind, s.Phase, model.OutcomeRefused, fmt.Sprintf("%s: not sent: %v", s.Detail, err), stepFences(s), s)
	}
	return err
}

// sentUnanswered reports whether this action sent a step of kind k
// before without learning its outcome: in this run, or as the ledger entry
// it continues records (an unknown outcome, or a write-ahead "sending"
// record: the last observation was read before the request just sent was
// written ahead, so any such record is an earlier one's).
func (r *run) sentUnanswered(k model.StepKind) bool {
	if r.unknown[k] > 0 {
		return true
	}
	for _, e := range r.last.Observation.Ledger {
		if e.ID != r.entryID {
			continue
		}
		// A "sending" record counts until an answer of the same kind
		// follows it (a refusal, a failure with the member's answer);
		// an unknown outcome always counts.
		pending := false
		for _, rc := range e.Receipts {
			if rc.Step != k {
				continue
			}
			switch rc.Outcome {
			case model.OutcomeUnknown:
				return true
			case model.OutcomeSending:
				pending = true
			default:
				pending = false
			}
		}
		return pending
	}
	return false
}

// unanswered handles a change sent without an answer: it may have been
// committed. The entry stays in progress and the next observation tells.
func (r *run) unanswered(ctx context.Context, s classify.Step, err error) error {
	r.mutated = true
	r.unknown[s.Kind]++
	msg := fmt.Sprintf("%s: sent, no answer (%v): it may have taken effect; observing to find out", s.Detail, err)
	r.receipt(s.Kind, s.Phase, model.OutcomeUnknown, msg, stepFences(s), s)
	if r.unknown[s.Kind] >= maxUnknown {
		return fmt.Errorf("%s: %d requests went unanswered; the action may have changed the cluster and stays in progress: run the command again to resume (%w)", s.Detail, r.unknown[s.Kind], err)
	}
	if err := r.pause(ctx); err != nil {
		return err
	}
	nd, derr := r.decide(ctx)
	if derr != nil {
		return derr
	}
	if next, ok := nd.Next(); nd.Verb == classify.VerbDone || (nd.Verb == classify.VerbProceed && ok && (next.Kind != s.Kind || next.MemberID != s.MemberID || next.Member != s.Member)) {
		r.receipt(s.Kind, s.Phase, model.OutcomeDone, fmt.Sprintf("%s: the unanswered request took effect (observed: the plan moved on)", s.Detail), stepFences(s), s)
	}
	return nil
}

// notYetAgain handles the engine refusing a step for now: it pauses, or
// fails the step once the engine kept refusing past the wait timeout.
func (r *run) notYetAgain(ctx context.Context, s classify.Step, err error) error {
	since, ok := r.notYet[s.Kind]
	if !ok {
		since = time.Now()
		r.notYet[s.Kind] = since
	}
	if time.Since(since) > orDur(r.x.WaitTimeout, DefaultWaitTimeout) {
		msg := fmt.Sprintf("%s: the engine kept refusing for %s: %v", s.Detail, time.Since(since).Round(time.Second), err)
		r.receipt(s.Kind, s.Phase, model.OutcomeFailed, msg+"; run the command again to resume", stepFences(s), s)
		return fmt.Errorf("%w: %s", ErrTimeout, msg)
	}
	return r.pause(ctx)
}

// maxStatusConflicts bounds the conflicts caused by status updates alone
// (a crash-looping pod) before the executor gives up.
const maxStatusConflicts = 20

// countConflict accounts for a delete that failed its precondition, given
// the decision observed after it: a change of metadata or spec counts
// against MaxConflicts, a status update against maxStatusConflicts.
func (r *run) countConflict(was model.Fence) error {
	k := was.Kind + "/" + was.UID
	limit := orInt(r.x.MaxConflicts, DefaultMaxConflicts)
	for _, g := range r.cur.Fences {
		if g.Kind == was.Kind && g.Name == was.Name && statusOnly(was, g) {
			k += "/status"
			limit = maxStatusConflicts
		}
	}
	r.conflicts[k]++
	if r.conflicts[k] > limit {
		return &FenceConflictError{Detail: fmt.Sprintf("%s %s kept changing under the action (%d conflicts)", was.Kind, was.Name, r.conflicts[k])}
	}
	return nil
}

func orInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// stop ends the run on err: an action that changed nothing is marked
// failed; one that did stays in progress, to be resumed by a rerun.
func (r *run) stop(err error) error {
	if !r.mutated && r.entryID != "" {
		r.receipt(model.StepReleaseLock, model.ActionPhaseFailed, model.OutcomeFailed, "stopped before changing anything: "+err.Error(), nil, classify.Step{})
	}
	return err
}

func (r *run) pause(ctx context.Context) error {
	return sleepCtx(ctx, orDur(r.x.PollInterval, DefaultPollInterval))
}

// wait polls until the first step of the decision is no longer s. It
// writes a receipt for s and for every later wait the world passed
// meanwhile, so that each phase shows in the ledger.
func (r *run) wait(ctx context.Context, s classify.Step) error {
	start := time.Now()
	deadline := start.Add(orDur(r.x.WaitTimeout, DefaultWaitTimeout))
	prev := r.cur.Steps
	var lastErr error
	for {
		if err := r.pause(ctx); err != nil {
			return err
		}
		d, err := r.decide(ctx)
		if err != nil {
			// The API server or a probe blipped: keep waiting.
			lastErr = err
		} else if d.Verb != classify.VerbProceed && d.Verb != classify.VerbDone {
			// A refusal while waiting (a leader election, a member list
			// in flux) is observed until the wait times out.
			lastErr = fmt.Errorf("decision %s: %s", d.Verb, firstBlocker(d))
		} else if next, ok := d.Next(); d.Verb == classify.VerbDone || !ok || next.Kind != s.Kind {
			r.passWaits(prev, d, fmt.Sprintf("done after %s", time.Since(start).Round(time.Second)))
			return nil
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s: not done after %s", s.Detail, time.Since(start).Round(time.Second))
			if lastErr != nil {
				msg += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			r.receipt(s.Kind, s.Phase, model.OutcomeFailed, msg+"; run the command again to resume", nil, s)
			return fmt.Errorf("%w: %s", ErrTimeout, msg)
		}
	}
}

// passWaits records the waits of a previous plan that the world passed
// before the new decision d: every wait up to d's first step (or to the
// next changing step), so that each phase shows in the ledger even when
// one observation saw several of them done.
func (r *run) passWaits(prev []classify.Step, d classify.Decision, how string) {
	next, ok := d.Next()
	for _, p := range prev {
		if (ok && d.Verb == classify.VerbProceed && p.Kind == next.Kind) || p.Kind.Mutates() {
			return
		}
		r.receipt(p.Kind, p.Phase, model.OutcomeDone, fmt.Sprintf("%s: %s", p.Detail, how), nil, p)
	}
}

// usesMemberOps reports whether step kind k goes through the engine's
// member operations (and so its credentials), not the API server.
func usesMemberOps(k model.StepKind) bool {
	switch k {
	case model.StepDeletePVC, model.StepDeletePod, model.StepScaleDown, model.StepScaleUp, model.StepRunRestore, model.StepDeleteRestorePod:
		return false
	}
	return true
}

// do carries out one changing step. A member that refused the
// credentials changed nothing: the error says which credentials were
// sent and how to name the right ones.
func (r *run) do(ctx context.Context, s classify.Step) (model.Outcome, string, error) {
	sent := r.sends.begin()
	o, detail, err := r.doStep(ctx, s)
	err = sent.judge(err)
	if errors.Is(err, engine.ErrForbidden) {
		err = fmt.Errorf("%w; the member changed nothing for this step. Its REST API refuses this client whatever the password: allow hactl's address in Patroni's restapi.allowlist, or, with verify_client, name a client certificate with %s", err, status.AnnotationTLSSecret)
	}
	if errors.Is(err, engine.ErrUnauthorized) {
		cl := r.last.Observation.Cluster
		if cl.RESTAuthSecret == "" {
			err = fmt.Errorf("%w; the member changed nothing for this step. The StatefulSet names no REST API credentials: annotate it with %s=<Secret with keys username and password> (Patroni's restapi.authentication)", err, status.AnnotationRESTAuthSecret)
		} else {
			err = fmt.Errorf("%w; the member changed nothing for this step. Check the username and password in Secret %q (annotation %s) against the members' restapi.authentication", err, cl.RESTAuthSecret, status.AnnotationRESTAuthSecret)
		}
	}
	return o, detail, err
}

// doStep carries out one changing step.
func (r *run) doStep(ctx context.Context, s classify.Step) (model.Outcome, string, error) {
	switch s.Kind {
	case model.StepDeletePVC, model.StepDeletePod:
		return r.deleteObject(ctx, s, false)
	case model.StepScaleDown, model.StepScaleUp, model.StepRunRestore, model.StepDeleteRestorePod:
		return r.restoreStep(ctx, s, false)
	}
	ops, err := r.memberOps(ctx)
	if err != nil {
		return "", "", err
	}
	cl := r.last.Observation.Cluster
	switch s.Kind {
	case model.StepSwitchover:
		// Sent to the primary the step names, as observed: the engine
		// refuses it if that member no longer leads.
		err := ops.MoveLeader(ctx, target(cl, s.From), s.MemberID)
		switch {
		case errors.Is(err, ErrAlready):
			return model.OutcomeAlready, fmt.Sprintf("%s: already so (%v)", s.Detail, err), nil
		case err != nil:
			return "", "", err
		}
		return model.OutcomeDone, fmt.Sprintf("%s: the engine accepted it; the members' answers tell when it is done", s.Detail), nil
	case model.StepReinitialize:
		ri, ok := ops.(engine.Reinitializer)
		if !ok {
			return "", "", fmt.Errorf("%w: %s clusters cannot reinitialize a member", ErrUnsupported, cl.Engine)
		}
		err := ri.Reinitialize(ctx, target(cl, s.Member))
		switch {
		case errors.Is(err, ErrAlready):
			return model.OutcomeAlready, fmt.Sprintf("%s: already rebuilding (%v)", s.Detail, err), nil
		case err != nil:
			return "", "", err
		}
		return model.OutcomeDone, fmt.Sprintf("%s: started", s.Detail), nil
	}
	leader := r.cur.Leader
	if leader == "" {
		return "", "", fmt.Errorf("%w: no leader to send the change to", ErrNotYet)
	}
	via := target(cl, leader)
	var opErr error
	detail := s.Detail
	switch s.Kind {
	case model.StepMoveLeader:
		opErr = ops.MoveLeader(ctx, via, s.MemberID)
	case model.StepRemoveMember:
		opErr = ops.RemoveMember(ctx, via, s.MemberID)
	case model.StepAddLearner:
		var p model.Peer
		p, opErr = ops.AddLearner(ctx, via, s.PeerURLs)
		if opErr == nil {
			detail = fmt.Sprintf("added learner %s with peer URL %s", p.ID, strings.Join(s.PeerURLs, ","))
			s.MemberID = p.ID
		}
	case model.StepPromoteLearner:
		if s.MemberID == "" {
			return "", "", fmt.Errorf("%w: the learner's member ID is not known yet", ErrNotYet)
		}
		opErr = ops.PromoteLearner(ctx, via, s.MemberID)
	default:
		return "", "", fmt.Errorf("%w: step %s", ErrUnsupported, s.Kind)
	}
	switch {
	case errors.Is(opErr, ErrAlready):
		return model.OutcomeAlready, fmt.Sprintf("%s: already so (%v)", s.Detail, opErr), nil
	case opErr != nil:
		return "", "", opErr
	}
	return model.OutcomeDone, detail + " (via " + leader + ")", nil
}

func (r *run) memberOps(ctx context.Context) (MemberOps, error) {
	if r.ops != nil {
		return r.ops, nil
	}
	if r.x.Members != nil {
		r.ops = r.x.Members
		return r.ops, nil
	}
	cl := r.last.Observation.Cluster
	eng, ok := r.x.Observer.engines()[cl.Engine]
	if !ok {
		return nil, fmt.Errorf("%w: member operations on %s clusters", ErrUnsupported, cl.Engine)
	}
	creds, err := Credentials(ctx, r.x.client(), cl)
	if err != nil {
		return nil, err
	}
	auth, err := RESTAuth(ctx, r.x.client(), cl)
	if err != nil {
		return nil, err
	}
	// The engine's requests travel in a tunnel the API transport guard
	// never sees: its dial and every write check the lock themselves.
	r.sends = &sendGuard{valid: func() error {
		if r.lock == nil {
			return nil
		}
		return r.lock.Valid()
	}}
	po := engine.ProbeOptions{Dial: r.sends.Dial(r.x.Observer.Dial), Timeout: r.x.Observer.ProbeTimeout, Credentials: creds, Auth: auth}
	if a, ok := eng.(engine.Actioner); ok {
		r.ops = a.Actions(po)
	} else {
		r.ops = eng.Members(po)
	}
	return r.ops, nil
}

// deleteObject deletes the step's object with its fence.
func (r *run) deleteObject(ctx context.Context, s classify.Step, dry bool) (model.Outcome, string, error) {
	return DeleteFenced(ctx, r.x.client(), *s.Fence, dry)
}

// DeleteFenced deletes the pod or claim f names with f's UID and
// resourceVersion as preconditions. A 409 is reported as OutcomeConflict
// and never retried (the caller observes again and decides again; with
// dry, it is an error); a missing object as OutcomeAlready.
func DeleteFenced(ctx context.Context, c kubernetes.Interface, f model.Fence, dry bool) (model.Outcome, string, error) {
	opts := metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(types.UID(f.UID)), ResourceVersion: ptr.To(f.ResourceVersion)},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch f.Kind {
	case "Pod":
		err = c.CoreV1().Pods(f.Namespace).Delete(ctx, f.Name, opts)
	case "PersistentVolumeClaim":
		err = c.CoreV1().PersistentVolumeClaims(f.Namespace).Delete(ctx, f.Name, opts)
	default:
		return "", "", fmt.Errorf("%w: deleting a %s", ErrUnsupported, f.Kind)
	}
	what := fmt.Sprintf("%s %s (uid %s, resourceVersion %s)", f.Kind, f.Name, f.UID, f.ResourceVersion)
	switch {
	case apierrors.IsConflict(err):
		if dry {
			return model.OutcomeConflict, what + ": precondition failed (server dry run)",
				&FenceConflictError{Detail: what + " changed (server dry run)"}
		}
		return model.OutcomeConflict, what + ": precondition failed, the object changed; not retried, observing again", nil
	case apierrors.IsNotFound(err):
		return model.OutcomeAlready, what + ": already gone", nil
	case err != nil:
		return "", "", fmt.Errorf("deleting %s: %w", what, err)
	case dry:
		return model.OutcomeDryRun, "would delete " + what + " (server dry run: preconditions hold)", nil
	}
	return model.OutcomeDone, "deleted " + what, nil
}
