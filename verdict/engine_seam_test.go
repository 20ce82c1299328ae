package verdict

import (
	"slices"
	"strings"
	"testing"

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
		got, v := Evaluate(obs, now, Options{})
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

// toyRules are an engine's verdict rules in a test: the seam is all an
// engine needs.
type toyRules struct{}

func (toyRules) analyze(s *state) {
	for _, v := range s.views {
		if ph, ok := podPhase(v); ok {
			v.m.Phase = ph
			continue
		}
		v.m.Phase = model.PhaseMember
	}
	s.a.Formed = true
}

func (toyRules) threshold(Options, model.ClusterFacts) uint64 { return 7 }

func (toyRules) reasons(s *state, r *reasons) {
	for _, v := range s.views {
		if v.m.Phase == model.PhaseMember {
			r.add(model.ReasonMemberLagging, v.m.Name, "the toy says so")
		}
	}
}

func TestToyEngineThroughTheSeam(t *testing.T) {
	engines["toy"] = toyRules{}
	defer delete(engines, "toy")
	obs := healthy()
	obs.Cluster.Engine = "toy"
	obs.Members[1].Pod.DeletionMarked = true
	got, v := Evaluate(obs, now, Options{})
	if !v.ControlReady || v.FailoverReady {
		t.Errorf("toy verdict %+v, want control-ready, not failover-ready (member_lagging)", v)
	}
	keys := reasonKeys(v.Reasons)
	if !slices.Contains(keys, "member_lagging etcd-0") || slices.Contains(keys, "member_lagging etcd-1") || !slices.Contains(keys, "pod_terminating etcd-1") {
		t.Errorf("toy reasons %v, want the toy's member_lagging for etcd-0 and etcd-2 and the shared pod_terminating for etcd-1", keys)
	}
	if thr := LagThreshold(Options{}, obs.Cluster); thr != 7 {
		t.Errorf("the toy's lag threshold %d, want its own 7", thr)
	}
	if got.Members[1].Phase != model.PhaseTerminating || got.Members[0].Phase != model.PhaseMember {
		t.Errorf("toy phases %s %s", got.Members[0].Phase, got.Members[1].Phase)
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
	pgc := model.ClusterFacts{Engine: model.EnginePatroni, Patroni: &model.PatroniClusterFacts{MaximumLagOnFailover: 2048}}
	for _, c := range []struct {
		name string
		o    Options
		c    model.ClusterFacts
		want uint64
	}{
		{"etcd default", Options{}, model.ClusterFacts{Engine: model.EngineEtcd}, DefaultLagThreshold},
		{"etcd option", Options{LagThreshold: 5}, model.ClusterFacts{Engine: model.EngineEtcd}, 5},
		{"patroni cluster's maximum_lag_on_failover", Options{LagThreshold: 5}, pgc, 2048},
		{"patroni option", Options{WALLagThreshold: 99}, pgc, 99},
		{"patroni default", Options{}, model.ClusterFacts{Engine: model.EnginePatroni}, DefaultWALLagThreshold},
		{"no rules", Options{}, model.ClusterFacts{Engine: "redis"}, DefaultLagThreshold},
	} {
		if got := LagThreshold(c.o, c.c); got != c.want {
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
func (handedToy) LagThreshold(r uint64, _ model.ClusterFacts) uint64 { return r + 1 }

// TestHandedRulesJudgeTheirEngine: rules handed in through Options.Rules
// judge their engine's clusters (phases, lags, reasons, leader), the
// shared disruption-budget and node-spread checks run against the
// tolerance they report, and LagThreshold asks them.
func TestHandedRulesJudgeTheirEngine(t *testing.T) {
	obs := healthy()
	obs.Cluster.Engine = "toy"
	o := Options{Rules: map[model.Engine]model.VerdictRules{"toy": handedToy{}}}
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
	if thr := LagThreshold(o, obs.Cluster); thr != DefaultLagThreshold+1 {
		t.Errorf("LagThreshold %d, want the handed rules' %d", thr, DefaultLagThreshold+1)
	}
	// Without the rules handed in, the same cluster is engine_unsupported.
	if v := Compute(obs, now, Options{}); !slices.Contains(codesOf(v), model.ReasonEngineUnsupported) {
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
