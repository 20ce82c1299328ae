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
