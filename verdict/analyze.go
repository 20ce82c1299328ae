package verdict

import (
	"slices"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// memberView is what the shared checks know about one member.
type memberView struct {
	m *model.Member
	// running: the container runs now. started: it has ever run.
	running, started bool
	// learner: the engine's rules do not count it as a voter; diverged:
	// it answered for another cluster or diverged from it.
	learner, diverged bool
	lag               *int64
	phase             model.Phase
}

// state is one evaluation: the analysis and the member views.
type state struct {
	obs   model.Observation
	now   time.Time
	opts  model.VerdictOptions
	a     model.Analysis
	views []*memberView
	// judged are the reasons handed rules found (handed.go);
	// disruptionJudged says they judged the disruption budget and the
	// spread over nodes too.
	judged           []model.Reason
	disruptionJudged bool
}

// Analyze returns the cluster-wide picture of obs at now.
func Analyze(obs model.Observation, now time.Time, opts model.VerdictOptions) model.Analysis {
	return analyze(obs, now, opts).a
}

// Derive returns a copy of obs whose Members carry their derived Phase and
// Lag. Only the Members slice is copied; everything else is shared with
// obs. Phases and lag already present in obs are ignored and recomputed.
func Derive(obs model.Observation, now time.Time, opts model.VerdictOptions) model.Observation {
	return analyze(obs, now, opts).obs
}

func analyze(obs model.Observation, now time.Time, opts model.VerdictOptions) *state {
	s := &state{now: now, opts: withDefaults(opts)}
	obs.Members = slices.Clone(obs.Members)
	s.obs = obs
	s.a.Probed = obs.EngineProbed

	for i := range s.obs.Members {
		m := &s.obs.Members[i]
		v := &memberView{m: m}
		if p := m.Pod; p != nil {
			v.running = p.Running
			v.started = p.Running || p.Started || p.EverStarted
		}
		s.views = append(s.views, v)
	}

	s.rules().analyze(s)
	return s
}
