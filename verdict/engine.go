package verdict

import (
	"slices"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// engineRules are what the verdict runs for a cluster's engine: the
// rules an engine keeps in its own package and hands in
// (Options.Rules, run by handedRules), or unsupportedRules.
//
// The verdict runs the checks every engine shares first (freshness of the
// observation, pods, client endpoints, certificates); the engine's rules
// then derive the cluster-wide picture and each member's phase and lag
// (analyze) and add the engine's reasons (reasons).
type engineRules interface {
	// analyze fills s.a and, for each view, the member's Phase and Lag
	// (and the view's lag), from the views analyze prepared.
	analyze(s *state)
	// reasons adds the engine's reasons.
	reasons(s *state, r *reasons)
	// threshold is the lag a member of cluster c may have under o (o's
	// defaults applied) and still count as caught up, in the engine's
	// unit of lag.
	threshold(o model.VerdictOptions, c model.ClusterFacts) uint64
}

// rules are the verdict rules of s's cluster's engine.
func (s *state) rules() engineRules {
	return rulesFor(s.opts, s.obs.Cluster.Engine)
}

// rulesFor are engine e's rules under o: those handed in
// (Options.Rules), unsupportedRules when there are none. The verdict
// has no rules of its own for any engine.
func rulesFor(o model.VerdictOptions, e model.Engine) engineRules {
	if r, ok := o.Rules[e]; ok && r != nil {
		return handedRules{r}
	}
	return unsupportedRules{}
}

// LagThreshold is the lag a member of cluster c may have under o and
// still count as caught up, in its engine's unit of lag (raft entries for
// etcd, bytes of WAL for Patroni); o.LagThreshold for an engine with no
// rules.
func LagThreshold(o model.VerdictOptions, c model.ClusterFacts) uint64 {
	o = withDefaults(o)
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

func (unsupportedRules) threshold(o model.VerdictOptions, _ model.ClusterFacts) uint64 {
	return o.LagThreshold
}

func (unsupportedRules) reasons(s *state, r *reasons) {
	var known []string
	for e, rules := range s.opts.Rules {
		if rules != nil {
			known = append(known, e.String())
		}
	}
	slices.Sort(known)
	if len(known) == 0 {
		r.Add(model.ReasonEngineUnsupported, "", "hactl has no rules for engine %q (label hactl.dev/engine): it was handed no engine's rules", s.obs.Cluster.Engine)
		return
	}
	r.Add(model.ReasonEngineUnsupported, "", "hactl has no rules for engine %q (label hactl.dev/engine): it judges %s clusters only", s.obs.Cluster.Engine, strings.Join(known, ", "))
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
