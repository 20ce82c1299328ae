package actions_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/seeding"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

// countingEngine is an engine handed to the executor in a test: etcd's,
// counting what the executor asks of it. It decodes templates as etcd
// does (the same engine, as its engine.Decoder).
type countingEngine struct {
	engine.Engine
	engine.Decoder
	probes, ops *atomic.Int64
}

func (c countingEngine) Probe(ctx context.Context, ts []engine.Target, o engine.ProbeOptions) []model.EngineFacts {
	c.probes.Add(1)
	return c.Engine.Probe(ctx, ts, o)
}

// VerdictRules hands on etcd's verdict rules: the wrapper judges as etcd.
func (c countingEngine) VerdictRules() model.VerdictRules {
	return c.Engine.(engine.Judged).VerdictRules()
}

func (c countingEngine) Members(o engine.ProbeOptions) engine.MemberOps {
	c.ops.Add(1)
	return c.Engine.Members(o)
}

// The executor observes and acts through the engines it is handed, and
// through no other: with etcd's engine wrapped, a replace probes and
// changes membership through the wrapper; with no engines handed, the
// cluster is observed from the API server alone and the replace is not
// decided on it.
func TestExecutorActsThroughTheEnginesItIsHanded(t *testing.T) {
	e := newEnv(t, true)
	e.startKubelet()
	target := e.follower()
	var probes, ops atomic.Int64
	x := e.executor()
	x.Observer.Engines = map[model.Engine]engine.Engine{etcdengine.Name: countingEngine{etcdengine.New(), etcdengine.New(), &probes, &ops}}
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed {
		t.Fatalf("decision:\n%v", classify.Describe(d))
	}
	res, err := x.Execute(context.Background(), d, actions.ExecOptions{})
	if err != nil || res.Final.Verb != model.VerbDone {
		t.Fatalf("execute: %v (%s)\n%s", err, res.Final.Verb, receiptsText(res.Receipts))
	}
	if probes.Load() == 0 || ops.Load() == 0 {
		t.Errorf("the handed engine was probed %d times and asked for member operations %d times, want both", probes.Load(), ops.Load())
	}

	none := e.executor()
	none.Observer.Engines = nil
	res2, _, err := none.Observer.Observe(context.Background(), e.ns, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if res2.Observation.EngineProbed {
		t.Error("with no engine handed, the members were probed")
	}
	if d := e.decide(none, e.follower()); d.Verb == model.VerbProceed {
		t.Errorf("with no engine handed, a replace was decided:\n%v", classify.Describe(d))
	}
}

// toySeeder is a seeder handed to the executor in a test: it records the
// capture it is asked for and publishes nothing.
type toySeeder struct{ asked chan seeding.Capture }

func (toySeeder) Published(context.Context, *artifact.Store, string, string) (*artifact.Manifest, error) {
	return nil, nil
}

func (s toySeeder) Seed(_ context.Context, c seeding.Capture) (seeding.Outcome, error) {
	s.asked <- c
	return seeding.Outcome{}, errToySeeder
}

var errToySeeder = errors.New("the toy seeder publishes nothing")

// A seed captures through the seeder the executor is handed for the
// cluster's engine, from the member decided under the lock, and through
// no other: with none handed, the seed is refused as unsupported and
// nothing is asked.
func TestSeedGoesThroughTheSeedersItIsHanded(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	url := "file://" + t.TempDir()
	store, err := artifact.OpenStore(ctx, url, artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	in := model.Intent{Action: model.ActionSeed, Options: model.ActionOptions{Generation: "g1", SeedStore: url}}
	opts := actions.ExecOptions{Seed: actions.SeedExec{Store: store, Capture: actions.CapturePortForward}}

	toy := toySeeder{asked: make(chan seeding.Capture, 1)}
	x := e.executor()
	x.Seeders = map[model.Engine]actions.Seeder{etcdengine.Name: toy}
	d, _, _, err := x.Decide(ctx, e.ns, "etcd", in)
	if err != nil || d.Verb != model.VerbProceed {
		t.Fatalf("decision: %v\n%v", err, classify.Describe(d))
	}
	if _, err := x.Execute(ctx, d, opts); !errors.Is(err, errToySeeder) {
		t.Fatalf("execute: %v, want the handed seeder's error", err)
	}
	select {
	case c := <-toy.asked:
		var src model.Step
		for _, s := range d.Steps {
			if s.Kind == model.StepCaptureSnapshot {
				src = s
			}
		}
		if c.Member != src.Member || c.Source.Pod != src.Member || c.Source.Namespace != e.ns || c.Generation != "g1" || c.Probe.Dial == nil {
			t.Errorf("the seeder was asked for %+v, want member %s of %s, generation g1, with a dial", c, src.Member, e.ns)
		}
	default:
		t.Fatal("the handed seeder was not asked")
	}

	none := e.executor()
	none.Seeders = nil
	d, _, _, err = none.Decide(ctx, e.ns, "etcd", in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.Execute(ctx, d, opts); !errors.Is(err, actions.ErrUnsupported) {
		t.Errorf("with no seeder handed: %v, want unsupported", err)
	}
}
