package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/classify"
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
	// Seeders capture and publish the seed generations of each engine's
	// clusters (the faces hand registry.Seeders()): a seed of an engine
	// with none is unsupported.
	Seeders map[model.Engine]Seeder
	// Plan, when set, is a saved plan being applied (kubectl hactl
	// apply): the decision made under the lock must not differ from it
	// (PlanDiff), or the run stops with a *PlanConflictError before
	// anything changes.
	Plan *model.Decision
}

// ExecOptions tune one Execute call.
type ExecOptions struct {
	DryRun DryRun
	// OnReceipt receives every receipt as it is recorded.
	OnReceipt func(model.Receipt)
	// OnDecision receives every re-classification while the action runs
	// (for progress views).
	OnDecision func(model.Decision)
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
	Final model.Decision
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
func (x *Executor) Decide(ctx context.Context, namespace, name string, in model.Intent) (model.Decision, status.Result, status.Warnings, error) {
	in.Options.LockHolder = x.identity()
	if in.Action == model.ActionSeed && in.Options.SeedStore == "" {
		cs, err := OpenClusterStore(ctx, x.client(), namespace, name, StoreRef{}, StoreOpen{NeedStatefulSet: true})
		if err != nil {
			return x.managedOr(ctx, namespace, name, in, err)
		}
		in.Options.SeedStore = cs.Store.String()
		_ = cs.Store.Close()
	}
	if in.Action == model.ActionRestore && in.Options.Source == nil && in.Options.Generation != "" {
		src, err := ReadRestoreSource(ctx, x.client(), namespace, name, in.Options.Generation, StoreRef{})
		if err != nil {
			return x.managedOr(ctx, namespace, name, in, err)
		}
		src.Pin(&in.Options)
		if pinned, err := ResolveAgentImage(ctx, in.Options.AgentImage); err == nil {
			in.Options.AgentImage = pinned
		}
	}
	return x.Observer.Decide(ctx, namespace, name, in)
}

// managedOr is the classifier's refusal when the cluster's members are
// another's (Observer.DecideManaged), else err.
func (x *Executor) managedOr(ctx context.Context, namespace, name string, in model.Intent, err error) (model.Decision, status.Result, status.Warnings, error) {
	if d, res, warn, ok := x.Observer.DecideManaged(ctx, namespace, name, in); ok {
		return d, res, warn, nil
	}
	return model.Decision{}, status.Result{}, nil, err
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
func (x *Executor) Execute(ctx context.Context, d model.Decision, o ExecOptions) (Result, error) {
	r := &run{x: x, o: o, confirmed: d, cur: d, ns: d.Cluster.Namespace, name: d.Cluster.Name,
		conflicts: map[string]int{}, notYet: map[model.StepKind]time.Time{}, unknown: map[model.StepKind]int{}}
	r.res.Final = d
	if o.DryRun == "" {
		r.o.DryRun = DryRunNone
	}
	switch d.Verb {
	case model.VerbRefuse:
		return r.res, &RefusedError{Decision: d}
	case model.VerbAwait, model.VerbObserve:
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

func firstBlocker(d model.Decision) string {
	if len(d.Blockers) == 0 {
		return ""
	}
	return d.Blockers[0].Detail
}

// run is one execution.
type run struct {
	x         *Executor
	o         ExecOptions
	confirmed model.Decision
	cur       model.Decision
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
	r.receipt(model.StepVerifyFences, model.ActionPhaseFencing, model.OutcomeDone, detail, d2.Fences, model.Step{MemberID: memberFenceID(d2)})
	if id := r.last.Analysis.ClusterID; id != "" {
		if err := r.ledger().RecordClusterID(ctx, id); err != nil {
			r.warn("cluster ID not recorded: %v", err)
		}
	}
	_, err = r.loop(ctx)
	return err
}

// begin records the ledger entry (new, or the one resumed) before the
// first change.
func (r *run) begin(ctx context.Context, d model.Decision) error {
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
		e.ID = NewEntryID(d.Intent.Action, r.member(model.Step{}), at)
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
func (r *run) decide(ctx context.Context) (model.Decision, error) {
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

// loop runs the current decision's first step, re-decides, until done.
func (r *run) loop(ctx context.Context) (Result, error) {
	refusedSince := time.Time{}
	for {
		if err := ctx.Err(); err != nil {
			return r.res, r.stop(fmt.Errorf("stopped: %w", err))
		}
		d := r.cur
		switch d.Verb {
		case model.VerbDone:
			r.done(ctx, d)
			return r.res, nil
		case model.VerbRefuse, model.VerbAwait, model.VerbObserve:
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
func (r *run) done(ctx context.Context, d model.Decision) {
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
	r.receipt(model.StepReleaseLock, model.ActionPhaseReady, model.OutcomeDone, detail, nil, model.Step{})
}

// refused handles a decision that refuses (or awaits, or observes) while
// the action runs: before any change, or past the grace a change in
// flight may cause (a leader election), it stops; else it observes again.
func (r *run) refused(ctx context.Context, d model.Decision, since time.Time) error {
	if !r.mutated || time.Since(since) > orDur(r.x.RefuseGrace, DefaultRefuseGrace) {
		err := error(&RefusedError{Decision: d, While: "while the action ran"})
		if d.Verb != model.VerbRefuse {
			err = &FenceConflictError{Detail: fmt.Sprintf("the decision became %s: %s", d.Verb, firstBlocker(d))}
		}
		r.receipt(model.StepVerifyFences, d.Phase, model.OutcomeRefused, err.Error(), nil, model.Step{})
		return err
	}
	if err := r.pause(ctx); err != nil {
		return err
	}
	_, err := r.decide(ctx)
	return err
}

// stop ends the run on err: an action that changed nothing is marked
// failed; one that did stays in progress, to be resumed by a rerun.
func (r *run) stop(err error) error {
	if !r.mutated && r.entryID != "" {
		r.receipt(model.StepReleaseLock, model.ActionPhaseFailed, model.OutcomeFailed, "stopped before changing anything: "+err.Error(), nil, model.Step{})
	}
	return err
}
