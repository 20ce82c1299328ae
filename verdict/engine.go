package verdict

import "github.com/hactl-dev/hactl/model"

// engineRules are one engine's verdict rules: what an engine must provide
// for hactl to judge its clusters.
//
// The verdict runs the checks every engine shares first (freshness of the
// observation, pods, client endpoints); the engine's rules then derive
// the cluster-wide picture and each member's phase and lag (analyze) and
// add the engine's reasons (reasons). An engine keeps its rules and
// helpers in its own files (etcd: etcd*.go, Patroni: patroni*.go), never
// in another engine's or in the shared ones.
type engineRules interface {
	// analyze fills s.a and, for each view, the member's Phase and Lag
	// (and the view's lag), from the views analyze prepared.
	analyze(s *state)
	// reasons adds the engine's reasons.
	reasons(s *state, r *reasons)
	// threshold is the lag a member of cluster c may have under o (o's
	// defaults applied) and still count as caught up, in the engine's
	// unit of lag.
	threshold(o Options, c model.ClusterFacts) uint64
}

// engines maps each engine hactl judges to its rules. A cluster of any
// other engine gets unsupportedRules: engine_unsupported, never another
// engine's rules.
var engines = map[model.Engine]engineRules{
	model.EngineEtcd:    etcdRules{},
	model.EnginePatroni: patroniRules{},
}

// rules are the verdict rules of s's cluster's engine: those handed in
// (Options.Rules) first, then those built in.
func (s *state) rules() engineRules {
	return rulesFor(s.opts, s.obs.Cluster.Engine)
}

// rulesFor are engine e's rules under o, unsupportedRules when it has
// none.
func rulesFor(o Options, e model.Engine) engineRules {
	if r, ok := o.Rules[e]; ok && r != nil {
		return handedRules{r}
	}
	if r, ok := engines[e]; ok {
		return r
	}
	return unsupportedRules{}
}

// LagThreshold is the lag a member of cluster c may have under o and
// still count as caught up, in its engine's unit of lag (raft entries for
// etcd, bytes of WAL for Patroni); o.LagThreshold for an engine with no
// rules.
func LagThreshold(o Options, c model.ClusterFacts) uint64 {
	o = o.withDefaults()
	return rulesFor(o, c.Engine).threshold(o, c)
}

// unsupportedRules stand for an engine hactl has no rules for: members'
// phases come from their pods alone, their lags are unknown, and the
// cluster is engine_unsupported.
type unsupportedRules struct{}

func (unsupportedRules) analyze(s *state) {
	for _, v := range s.views {
		ph, ok := podPhase(v)
		if !ok {
			ph = model.PhaseUnknown
		}
		v.phase, v.lag = ph, nil
		v.m.Phase, v.m.Lag = ph, nil
	}
}

func (unsupportedRules) threshold(o Options, _ model.ClusterFacts) uint64 { return o.LagThreshold }

func (unsupportedRules) reasons(s *state, r *reasons) {
	r.add(model.ReasonEngineUnsupported, "", "hactl has no rules for engine %q (label hactl.dev/engine): it judges etcd and patroni clusters only", s.obs.Cluster.Engine)
}

// podPhase is the phase a member's pod alone decides (absent,
// terminating, pending); false when the engine's facts decide it.
func podPhase(v *memberView) (model.Phase, bool) {
	p := v.m.Pod
	switch {
	case p == nil:
		return model.PhaseAbsent, true
	case p.DeletionMarked:
		return model.PhaseTerminating, true
	case !v.started:
		return model.PhasePending, true
	}
	return "", false
}
