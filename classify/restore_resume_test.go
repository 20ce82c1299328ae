package classify

import (
	"slices"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// untouchedRestore is the ledger entry of a restore whose holder died
// after it recorded the entry and verified the fences, before its first
// change: the receipts of the lock and the fences only, and (in
// outcomes) receipts of changing steps that say the request never took
// effect.
func untouchedRestore(outcomes ...model.Outcome) model.LedgerEntry {
	e := restoreEntry(model.StepAcquireLock, model.StepVerifyFences)
	for _, o := range outcomes {
		e.Receipts = append(e.Receipts, model.Receipt{Seq: len(e.Receipts), Step: model.StepScaleDown, Outcome: o})
	}
	return e
}

func hasBlocker(d model.Decision, code model.Code) *model.Blocker {
	for i := range d.Blockers {
		if d.Blockers[i].Code == code {
			return &d.Blockers[i]
		}
	}
	return nil
}

func hasNote(d model.Decision, code model.Code) bool {
	return slices.ContainsFunc(d.Notes, func(n model.Note) bool { return n.Code == code })
}

// A restore resumed before it changed anything is a fresh decision: every
// gate runs again. The members got their quorum back since the holder
// died: the resume is refused (unless --force), as a new restore would be.
func TestRestoreResumedBeforeAnyChangeIsDecidedAfresh(t *testing.T) {
	for name, e := range map[string]model.LedgerEntry{
		"lock and fences only":                  untouchedRestore(),
		"scale-down refused before it was sent": untouchedRestore(model.OutcomeRefused),
		"scale-down answered with a conflict":   untouchedRestore(model.OutcomeConflict),
		"scale-down answered with an error":     untouchedRestore(model.OutcomeFailed),
		"scale-down only dry-run":               untouchedRestore(model.OutcomeDryRun),
	} {
		t.Run(name, func(t *testing.T) {
			obs := healthy()
			restorable(&obs)
			obs.Ledger = []model.LedgerEntry{e}
			d := judgedClassify(obs, restoreIntent, now)
			if d.Resume != e.ID {
				t.Fatalf("resume %q, want %s", d.Resume, e.ID)
			}
			b := hasBlocker(d, model.CodeClusterHasQuorum)
			if d.Verb != model.VerbRefuse || b == nil || b.Override != model.FlagForce {
				t.Fatalf("verb %s, want refuse with cluster_has_quorum (--force):\n%s", d.Verb, strings.Join(Describe(d), "\n"))
			}
			if d.Quorum.Voters != 3 || d.Quorum.HealthyWithout != 3 {
				t.Errorf("quorum %+v, want 3 of 3 voters healthy", d.Quorum)
			}
			// --force restores anyway, saying what is lost.
			d = judgedClassify(obs, withOpts(restoreIntent, func(o *model.ActionOptions) { o.Force = true }), now)
			if d.Verb != model.VerbProceed || !hasNote(d, model.CodeWritesDiscarded) || d.Steps[0].Kind != model.StepScaleDown {
				t.Errorf("forced: verb %s, want proceed from the scale-down with writes_discarded:\n%s", d.Verb, strings.Join(Describe(d), "\n"))
			}
		})
	}

	// The generation gate runs too: a restore forced onto a generation of
	// an earlier incarnation and resumed without --force is refused.
	obs := healthy()
	lostQuorum(&obs)
	for i := range obs.Members {
		if e := obs.Members[i].Engine; e != nil && e.Reachable {
			e.ClusterID = otherID
		}
	}
	obs.Ledger = []model.LedgerEntry{untouchedRestore()}
	d := judgedClassify(obs, restoreIntent, now)
	if d.Resume != obs.Ledger[0].ID || hasBlocker(d, model.CodeGenerationForeign) == nil {
		t.Errorf("resume %q, want %s refused with generation_foreign:\n%s", d.Resume, obs.Ledger[0].ID, strings.Join(Describe(d), "\n"))
	}
}

// A restore resumed after it changed something (or may have: a request
// sent without an answer, a write-ahead record without one, a StatefulSet
// scaled below the recorded size, a restore pod of it) says what the rest
// discards, and still refuses to scale down members that hold quorum
// unless --force.
func TestRestoreResumedAfterAChangeRefusesWhileTheMembersHoldQuorum(t *testing.T) {
	receipt := func(k model.StepKind, o model.Outcome) func(*model.Observation, *model.LedgerEntry) {
		return func(_ *model.Observation, e *model.LedgerEntry) {
			e.Receipts = append(e.Receipts, model.Receipt{Seq: len(e.Receipts), Step: k, Outcome: o})
		}
	}
	for name, changed := range map[string]func(*model.Observation, *model.LedgerEntry){
		"scale-down done":                receipt(model.StepScaleDown, model.OutcomeDone),
		"scale-down already so":          receipt(model.StepScaleDown, model.OutcomeAlready),
		"scale-down unanswered":          receipt(model.StepScaleDown, model.OutcomeUnknown),
		"scale-down written ahead":       receipt(model.StepScaleDown, model.OutcomeSending),
		"restore pod written ahead":      receipt(model.StepRunRestore, model.OutcomeSending),
		"scaled below the recorded size": func(o *model.Observation, _ *model.LedgerEntry) { o.Cluster.Replicas = 2 },
		"a restore pod of the entry": func(o *model.Observation, e *model.LedgerEntry) {
			restorePods(o, e.ID, "Running")
		},
	} {
		t.Run(name, func(t *testing.T) {
			obs := healthy()
			restorable(&obs)
			e := untouchedRestore()
			changed(&obs, &e)
			obs.Ledger = []model.LedgerEntry{e}
			d := judgedClassify(obs, restoreIntent, now)
			if d.Resume != e.ID {
				t.Fatalf("resume %q, want %s", d.Resume, e.ID)
			}
			b := hasBlocker(d, model.CodeClusterHasQuorum)
			if d.Verb != model.VerbRefuse || b == nil || b.Override != model.FlagForce {
				t.Fatalf("verb %s, want refuse with cluster_has_quorum (--force):\n%s", d.Verb, strings.Join(Describe(d), "\n"))
			}
			if !hasNote(d, model.CodeWritesDiscarded) {
				t.Errorf("no writes_discarded note says what the rest of the restore discards:\n%s", strings.Join(Describe(d), "\n"))
			}
			d = judgedClassify(obs, withOpts(restoreIntent, func(o *model.ActionOptions) { o.Force = true }), now)
			if d.Verb != model.VerbProceed || !hasNote(d, model.CodeWritesDiscarded) || !slices.ContainsFunc(d.Steps, func(s model.Step) bool { return s.Kind == model.StepScaleDown }) {
				t.Errorf("forced: verb %s, want proceed with the scale-down and writes_discarded:\n%s", d.Verb, strings.Join(Describe(d), "\n"))
			}
		})
	}

	// Once the StatefulSet wants 0 replicas nothing is scaled down any
	// more: members still answering on their way out do not stop the
	// resume.
	obs := healthy()
	restorable(&obs)
	obs.Cluster.Replicas = 0
	e := untouchedRestore()
	receipt(model.StepScaleDown, model.OutcomeDone)(&obs, &e)
	obs.Ledger = []model.LedgerEntry{e}
	d := judgedClassify(obs, restoreIntent, now)
	if d.Verb != model.VerbProceed || d.Resume != e.ID || hasBlocker(d, model.CodeClusterHasQuorum) != nil || d.Steps[0].Kind != model.StepAwaitMembersStopped {
		t.Errorf("scaled to zero, members stopping: verb %s resume %q, want proceed from the wait for the members to stop:\n%s", d.Verb, d.Resume, strings.Join(Describe(d), "\n"))
	}

	// Without quorum the resume goes on, saying what the rest discards.
	obs = healthy()
	lostQuorum(&obs)
	e = untouchedRestore()
	receipt(model.StepScaleDown, model.OutcomeUnknown)(&obs, &e)
	obs.Ledger = []model.LedgerEntry{e}
	d = judgedClassify(obs, restoreIntent, now)
	if d.Verb != model.VerbProceed || d.Resume != e.ID || !hasNote(d, model.CodeWritesDiscarded) || d.Steps[0].Kind != model.StepScaleDown {
		t.Errorf("without quorum: verb %s resume %q, want proceed from the scale-down with writes_discarded:\n%s", d.Verb, d.Resume, strings.Join(Describe(d), "\n"))
	}
}
