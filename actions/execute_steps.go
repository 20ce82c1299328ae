package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// This file runs one step at a time: whether it may run (the lock, an
// unanswered earlier attempt, a conflict), its wait or its change (an API
// delete with preconditions, a member operation through the engine), and
// what an unknown outcome means for the next decision.

// next carries out the first step of d (a wait, or one change), then
// observes and decides again.
func (r *run) next(ctx context.Context, d model.Decision) error {
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
	if err == nil && out != model.OutcomeConflict && nd.Verb != model.VerbRefuse {
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
func (r *run) mayRun(s model.Step) error {
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
func (r *run) unanswered(ctx context.Context, s model.Step, err error) error {
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
	if next, ok := nd.Next(); nd.Verb == model.VerbDone || (nd.Verb == model.VerbProceed && ok && (next.Kind != s.Kind || next.MemberID != s.MemberID || next.Member != s.Member)) {
		r.receipt(s.Kind, s.Phase, model.OutcomeDone, fmt.Sprintf("%s: the unanswered request took effect (observed: the plan moved on)", s.Detail), stepFences(s), s)
	}
	return nil
}

// notYetAgain handles the engine refusing a step for now: it pauses, or
// fails the step once the engine kept refusing past the wait timeout.
func (r *run) notYetAgain(ctx context.Context, s model.Step, err error) error {
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

// maxUnknown bounds the unanswered requests of one step kind before the
// run stops (the entry stays in progress: a rerun resumes).
const maxUnknown = 3

// undone refuses a scale-down that this action already made and someone
// else undid (a GitOps controller putting replicas back mid-restore):
// scaling down again would fight it.
func (r *run) undone(s model.Step) error {
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

func (r *run) pause(ctx context.Context) error {
	return sleepCtx(ctx, orDur(r.x.PollInterval, DefaultPollInterval))
}

// wait polls until the first step of the decision is no longer s. It
// writes a receipt for s and for every later wait the world passed
// meanwhile, so that each phase shows in the ledger.
func (r *run) wait(ctx context.Context, s model.Step) error {
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
		} else if d.Verb != model.VerbProceed && d.Verb != model.VerbDone {
			// A refusal while waiting (a leader election, a member list
			// in flux) is observed until the wait times out.
			lastErr = fmt.Errorf("decision %s: %s", d.Verb, firstBlocker(d))
		} else if next, ok := d.Next(); d.Verb == model.VerbDone || !ok || next.Kind != s.Kind {
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
func (r *run) passWaits(prev []model.Step, d model.Decision, how string) {
	next, ok := d.Next()
	for _, p := range prev {
		if (ok && d.Verb == model.VerbProceed && p.Kind == next.Kind) || p.Kind.Mutates() {
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
func (r *run) do(ctx context.Context, s model.Step) (model.Outcome, string, error) {
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
func (r *run) doStep(ctx context.Context, s model.Step) (model.Outcome, string, error) {
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
func (r *run) deleteObject(ctx context.Context, s model.Step, dry bool) (model.Outcome, string, error) {
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

// ownRestorePod reports whether s deletes a restore pod this action
// created (its run-restore receipt is recorded): the confirmed plan showed
// its delete before the pod existed. Any other restore pod (a leftover of
// another action) needs a fence the operator confirmed.
func (r *run) ownRestorePod(s model.Step) bool {
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
