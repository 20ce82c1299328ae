package verdict

import (
	"slices"
	"strings"
	"testing"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
)

// A cluster of an engine hactl has no verdict rules for is never judged
// by another engine's rules: its verdict is engine_unsupported (not
// control-ready), beside the checks every engine shares (pods, freshness,
// endpoints), and its members' phases come from their pods alone.
func TestUnknownEngineIsUnsupportedNotJudgedByRaft(t *testing.T) {
	for _, probed := range []bool{true, false} {
		obs := healthy()
		obs.Cluster.Engine = "redis"
		obs.EngineProbed = probed
		// Facts that raft rules would judge: no leader anywhere.
		for i := range obs.Members {
			eng(&obs, i).LeaderID = "0"
		}
		obs.Members[2].Pod = nil
		got, v := Evaluate(obs, now, model.VerdictOptions{})
		if v.ControlReady || v.FailoverReady {
			t.Errorf("probed=%v: an unknown engine's cluster is ready: %+v", probed, v)
		}
		codes := map[model.ReasonCode]bool{}
		for _, r := range v.Reasons {
			codes[r.Code] = true
		}
		if !codes[model.ReasonEngineUnsupported] || !strings.Contains(reasonDetail(v, model.ReasonEngineUnsupported), "redis") {
			t.Errorf("probed=%v: reasons %v, want engine_unsupported naming the engine", probed, reasonKeys(v.Reasons))
		}
		if !codes[model.ReasonPodMissing] {
			t.Errorf("probed=%v: reasons %v, want the shared pod_missing as well", probed, reasonKeys(v.Reasons))
		}
		for _, raft := range []model.ReasonCode{model.ReasonLeaderMissing, model.ReasonQuorumUnavailable, model.ReasonMemberLagging, model.ReasonLagUnknown} {
			if codes[raft] {
				t.Errorf("probed=%v: an unknown engine is judged by etcd's rule %s: %v", probed, raft, reasonKeys(v.Reasons))
			}
		}
		want := []model.Phase{model.PhaseUnknown, model.PhaseUnknown, model.PhaseAbsent}
		for i, m := range got.Members {
			if m.Phase != want[i] || m.Lag != nil {
				t.Errorf("probed=%v: %s phase %q lag %v, want %q and no lag", probed, m.Name, m.Phase, m.Lag, want[i])
			}
		}
	}
}

func reasonDetail(v model.Verdict, c model.ReasonCode) string {
	for _, r := range v.Reasons {
		if r.Code == c {
			return r.Detail
		}
	}
	return ""
}

// LagThreshold answers in each engine's unit, from its rules.
func TestLagThresholdByEngine(t *testing.T) {
	pgc := model.ClusterFacts{Engine: patroniengine.Name, Patroni: &model.PatroniClusterFacts{MaximumLagOnFailover: 2048}}
	for _, c := range []struct {
		name string
		o    model.VerdictOptions
		c    model.ClusterFacts
		want uint64
	}{
		{"etcd default", model.VerdictOptions{}, model.ClusterFacts{Engine: etcdengine.Name}, model.DefaultLagThreshold},
		{"etcd option", model.VerdictOptions{LagThreshold: 5}, model.ClusterFacts{Engine: etcdengine.Name}, 5},
		{"patroni cluster's maximum_lag_on_failover", model.VerdictOptions{LagThreshold: 5}, pgc, 2048},
		{"patroni option", model.VerdictOptions{WALLagThreshold: 99}, pgc, 99},
		{"patroni default", model.VerdictOptions{}, model.ClusterFacts{Engine: patroniengine.Name}, patroniengine.DefaultWALLagThreshold},
		{"no rules", model.VerdictOptions{}, model.ClusterFacts{Engine: "redis"}, model.DefaultLagThreshold},
	} {
		if got := LagThreshold(judged(c.o), c.c); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// handedToy are rules an engine keeps in its own package, handed in
// through Options.Rules: every member a member with lag 7, one reason,
// and a tolerance of 0.
type handedToy struct{}

func (handedToy) Judge(in model.JudgeInput) model.Judgement {
	n := len(in.Observation.Members)
	j := model.Judgement{Phases: make([]model.Phase, n), Lags: make([]*int64, n), Voters: n, Quorum: n, Tolerance: 0,
		Formed: true, LeaderMember: in.Observation.Members[0].Name, Reasons: []model.Reason{{Code: model.ReasonMemberNotReady, Member: in.Observation.Members[1].Name, Detail: "toy says so"}}}
	for i := range j.Phases {
		lag := int64(7)
		j.Phases[i], j.Lags[i] = model.PhaseMember, &lag
		if in.PodPhases[i] != "" {
			j.Phases[i], j.Lags[i] = in.PodPhases[i], nil
		}
	}
	return j
}
func (handedToy) LagThreshold(t model.Thresholds, _ model.ClusterFacts) uint64 { return t.Lag + 1 }

// TestHandedRulesJudgeTheirEngine: rules handed in through Options.Rules
// judge their engine's clusters (phases, lags, reasons, leader), the
// shared disruption-budget and node-spread checks run against the
// tolerance they report, and LagThreshold asks them.
func TestHandedRulesJudgeTheirEngine(t *testing.T) {
	obs := healthy()
	obs.Cluster.Engine = "toy"
	o := model.VerdictOptions{Rules: map[model.Engine]model.VerdictRules{"toy": handedToy{}}}
	d, v, a := EvaluateAll(obs, now, o)
	if a.LeaderMember != obs.Members[0].Name || a.Tolerance != 0 {
		t.Errorf("analysis %+v", a)
	}
	for _, m := range d.Members {
		if m.Phase != model.PhaseMember || m.Lag == nil || *m.Lag != 7 {
			t.Errorf("%s: phase %s lag %v", m.Name, m.Phase, m.Lag)
		}
	}
	got := codesOf(v)
	for _, want := range []model.ReasonCode{model.ReasonMemberNotReady, model.ReasonMembersColocated} {
		if !slices.Contains(got, want) {
			t.Errorf("reasons %v lack %s", got, want)
		}
	}
	if slices.Contains(got, model.ReasonEngineUnsupported) {
		t.Errorf("a judged engine called unsupported: %v", got)
	}
	if thr := LagThreshold(o, obs.Cluster); thr != model.DefaultLagThreshold+1 {
		t.Errorf("LagThreshold %d, want the handed rules' %d", thr, model.DefaultLagThreshold+1)
	}
	// Without the rules handed in, the same cluster is engine_unsupported.
	if v := Compute(obs, now, model.VerdictOptions{}); !slices.Contains(codesOf(v), model.ReasonEngineUnsupported) {
		t.Errorf("without rules: %v", codesOf(v))
	}
}

func codesOf(v model.Verdict) []model.ReasonCode {
	var out []model.ReasonCode
	for _, r := range v.Reasons {
		out = append(out, r.Code)
	}
	return out
}

// silentRules judge every member a caught-up member and find nothing.
type silentRules struct{}

func (silentRules) Judge(in model.JudgeInput) model.Judgement {
	n := len(in.Observation.Members)
	j := model.Judgement{Phases: make([]model.Phase, n), Lags: make([]*int64, n), Voters: n, Quorum: n/2 + 1, Tolerance: n - (n/2 + 1), Formed: true}
	for i := range j.Phases {
		var lag int64
		j.Phases[i], j.Lags[i] = model.PhaseMember, &lag
	}
	return j
}
func (silentRules) LagThreshold(t model.Thresholds, _ model.ClusterFacts) uint64 { return t.Lag }

// Without probes nothing measured lag, whatever an engine's rules say: a
// cluster no member of which was asked is never failover-ready, even when
// its rules add no reason of their own (the http engine's, unprobed).
func TestUnprobedIsNeverFailoverReady(t *testing.T) {
	o := model.VerdictOptions{Rules: map[model.Engine]model.VerdictRules{"toy": silentRules{}}}
	obs := healthy()
	obs.Cluster.Engine = "toy"
	if v := Compute(obs, now, o); !v.FailoverReady || len(v.Reasons) != 0 {
		t.Fatalf("probed: %+v, want failover-ready with no reason", v)
	}
	obs.EngineProbed = false
	v := Compute(obs, now, o)
	if !v.ControlReady || v.FailoverReady || !slices.Contains(reasonKeys(v.Reasons), "lag_unknown") {
		t.Errorf("unprobed: %+v, want control-ready, not failover-ready, lag_unknown", v)
	}
}
