package classify

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// A restore in progress of another generation, or of the same generation
// ID with another digest, is never resumed: the new restore is a new
// action that passes every gate (here: the cluster has quorum again), and
// the old entry is superseded.
func TestRestoreResumesOnlyTheSameGenerationAndDigest(t *testing.T) {
	for name, mutate := range map[string]func(*model.LedgerEntry){
		"another generation":           func(e *model.LedgerEntry) { e.Generation = "weekly-7" },
		"same generation, new digest":  func(e *model.LedgerEntry) { e.Digest = "sha256:0bad" },
		"same digest, another cluster": func(e *model.LedgerEntry) { e.FromClusterID = otherID },
	} {
		t.Run(name, func(t *testing.T) {
			obs := healthy()
			restorable(&obs)
			e := restoreEntry(model.StepScaleDown)
			mutate(&e)
			obs.Ledger = []model.LedgerEntry{e}
			d := judgedClassify(obs, restoreIntent, now)
			if d.Resume != "" {
				t.Fatalf("resumed %s:\n%s", d.Resume, strings.Join(Describe(d), "\n"))
			}
			if !slices.ContainsFunc(d.Blockers, func(b model.Blocker) bool { return b.Code == model.CodeClusterHasQuorum }) {
				t.Errorf("the quorum gate did not run:\n%s", strings.Join(Describe(d), "\n"))
			}
			if !slices.Equal(d.Supersedes, []string{e.ID}) {
				t.Errorf("supersedes %v, want [%s]", d.Supersedes, e.ID)
			}
		})
	}
	// The same generation and digest resumes.
	obs := healthy()
	lostQuorum(&obs)
	scaledToZero(&obs)
	obs.Ledger = []model.LedgerEntry{restoreEntry(model.StepScaleDown)}
	if d := judgedClassify(obs, restoreIntent, now); d.Resume != obs.Ledger[0].ID || len(d.Supersedes) > 0 {
		t.Errorf("same generation and digest: resume %q, supersedes %v", d.Resume, d.Supersedes)
	}
	// An entry written before digests were recorded resumes by its
	// generation (its restore pods carry no pin either).
	obs.Ledger[0].Digest = ""
	if d := judgedClassify(obs, restoreIntent, now); d.Resume != obs.Ledger[0].ID || len(d.Supersedes) > 0 {
		t.Errorf("an entry without a digest: resume %q, supersedes %v", d.Resume, d.Supersedes)
	}
}

// A restore superseded after it scaled the StatefulSet to zero still
// knows how many members to restore.
func TestSupersededRestoreKeepsTheSize(t *testing.T) {
	obs := healthy()
	lostQuorum(&obs)
	scaledToZero(&obs)
	e := restoreEntry(model.StepScaleDown)
	e.Generation = "weekly-7"
	obs.Ledger = []model.LedgerEntry{e}
	d := judgedClassify(obs, restoreIntent, now)
	if d.Verb != model.VerbProceed || d.Replicas != 3 || d.Resume != "" {
		t.Fatalf("verb %s, replicas %d, resume %q:\n%s", d.Verb, d.Replicas, d.Resume, strings.Join(Describe(d), "\n"))
	}
}

// staleReplace is an in-progress replace of etcd-1 whose recorded member,
// pod and volume are all gone and that nothing in the member list
// continues (etcd-1 is not listed: its new pod never joined), untouched
// for age.
func staleReplace(obs *model.Observation, age time.Duration) model.LedgerEntry {
	removedByHand(obs, 1)
	e := inProgress()
	e.Replaced = model.Replaced{PodUID: "pod-uid-old", PVCUID: "pvc-uid-old", MemberID: "0000000000000bad", PeerURLs: []string{peerURL(1)}}
	e.UpdatedAt = now.Add(-age)
	e.StartedAt = e.UpdatedAt.Add(-time.Minute)
	obs.Ledger = []model.LedgerEntry{e}
	return e
}

func TestStaleEntryIsSuperseded(t *testing.T) {
	obs := healthy()
	e := staleReplace(&obs, 2*time.Hour)
	d := judgedClassify(obs, replace1, now)
	if d.Resume != "" || !slices.Equal(d.Supersedes, []string{e.ID}) {
		t.Fatalf("resume %q, supersedes %v:\n%s", d.Resume, d.Supersedes, strings.Join(Describe(d), "\n"))
	}
	if d.Verb != model.VerbProceed || d.Replaced.PodUID != "pod-uid-1" || d.Replaced.PVCUID != "pvc-uid-1" {
		t.Errorf("verb %s, replaced %+v, want a fresh plan replacing the pod and volume there now:\n%s", d.Verb, d.Replaced, strings.Join(Describe(d), "\n"))
	}
	// Its peer URL is listed again (a learner it added, say): a normal
	// resume, however old.
	obs = healthy()
	staleReplace(&obs, 2*time.Hour)
	list := peers(3)
	list[1].Name, list[1].ID, list[1].IsLearner = "", learnerID, true
	setPeers(&obs, list)
	if d := judgedClassify(obs, replace1, now); d.Resume == "" {
		t.Errorf("an entry whose learner is listed was superseded: %v", d.Supersedes)
	}

	// Recently touched: it may be a live action between two steps; it is
	// resumed, not superseded.
	obs = healthy()
	staleReplace(&obs, 5*time.Minute)
	if d := judgedClassify(obs, replace1, now); d.Resume == "" || len(d.Supersedes) > 0 {
		t.Errorf("a recent entry: resume %q, supersedes %v", d.Resume, d.Supersedes)
	}
	// Its recorded volume still stands: not stale, whatever its age.
	obs = healthy()
	staleReplace(&obs, 2*time.Hour)
	obs.Ledger[0].Replaced.PVCUID = "pvc-uid-1"
	if d := judgedClassify(obs, replace1, now); d.Resume == "" {
		t.Errorf("an entry whose volume still stands was superseded: %v", d.Supersedes)
	}
	// --supersede clears it at once.
	obs = healthy()
	e = staleReplace(&obs, time.Minute)
	in := withOpts(replace1, func(o *model.ActionOptions) { o.Supersede = true })
	if d := judgedClassify(obs, in, now); d.Resume != "" || !slices.Equal(d.Supersedes, []string{e.ID}) || d.Replaced.PodUID != "pod-uid-1" {
		t.Errorf("--supersede: resume %q, supersedes %v, replaced %+v", d.Resume, d.Supersedes, d.Replaced)
	}
}

// A seed in progress resumes only for the same generation: a seed of
// another generation is a new seed, and the old entry is superseded.
func TestSeedResumesOnlyTheSameGeneration(t *testing.T) {
	in := withOpts(intentFor(model.ActionSeed, ""), func(o *model.ActionOptions) { o.SeedStore = "s3://b"; o.Generation = "g2" })
	entry := model.LedgerEntry{ID: "seed.etcd-0.1", Action: model.ActionSeed, State: model.EntryInProgress,
		Phase: model.ActionPhaseCapturing, Generation: "g1", StartedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute)}
	obs := healthy()
	obs.Ledger = []model.LedgerEntry{entry}
	d := judgedClassify(obs, in, now)
	if d.Resume != "" || !slices.Equal(d.Supersedes, []string{entry.ID}) || d.Verb != model.VerbProceed {
		t.Fatalf("a seed of g2 over g1's entry: resume %q, supersedes %v, verb %s\n%s", d.Resume, d.Supersedes, d.Verb, strings.Join(Describe(d), "\n"))
	}
	in.Options.Generation = "g1"
	if d := judgedClassify(obs, in, now); d.Resume != entry.ID || len(d.Supersedes) > 0 {
		t.Fatalf("the same generation: resume %q, supersedes %v", d.Resume, d.Supersedes)
	}
}
