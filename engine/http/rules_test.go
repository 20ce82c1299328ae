package http

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func u64(n uint64) *uint64 { return &n }
func yes(b bool) *bool     { return &b }

// cluster is three answering members of one cluster: m-0 leads at
// frontier 1000, the others applied 1000 and 990.
func cluster() model.Observation {
	obs := model.Observation{At: now, EngineProbed: true, Cluster: model.ClusterFacts{
		Namespace: "ns", Name: "m", Engine: Name, Replicas: 3, CreatedAt: now.Add(-time.Hour),
		EngineConfig: map[string]string{"port": "80", "role": "{.role}"},
	}}
	for i, applied := range []uint64{1000, 1000, 990} {
		name := "m-" + string(rune('0'+i))
		e := &model.EngineFacts{Reachable: true, MemberID: name, ClusterID: "c1", Version: "1.0",
			RaftApplied: applied, Document: &model.DocumentFacts{Role: "follower", Applied: u64(applied), Ready: yes(true)}}
		if i == 0 {
			e.LeaderID, e.Document.Role, e.Document.Frontier, e.RaftIndex = name, "leader", u64(1000), 1000
		}
		obs.Members = append(obs.Members, model.Member{Name: name, Ordinal: i,
			Pod: &model.PodFacts{Name: name, Running: true, Ready: true, Node: "n" + name}, Engine: e})
	}
	return obs
}

func judgeOf(obs model.Observation, thr uint64) model.Judgement {
	return Rules{}.Judge(model.JudgeInput{Observation: obs, Now: now, PodPhases: make([]model.Phase, len(obs.Members)),
		LagThreshold: thr, BootstrapWindow: 10 * time.Minute})
}

func codes(j model.Judgement) []string {
	var out []string
	for _, r := range j.Reasons {
		out = append(out, string(r.Code)+"@"+r.Member)
	}
	slices.Sort(out)
	return out
}

func lag(j model.Judgement, i int) string {
	if j.Lags[i] == nil {
		return "?"
	}
	return strconv.FormatInt(*j.Lags[i], 10)
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*model.Observation)
		thr    uint64
		want   []string // reason codes @ member
		phases []model.Phase
		lags   []int64 // -1: unknown
	}{
		{name: "healthy", thr: 100, phases: []model.Phase{model.PhaseMember, model.PhaseMember, model.PhaseMember}, lags: []int64{0, 0, 10}},
		{name: "lagging", thr: 5, want: []string{"member_lagging@m-2"},
			phases: []model.Phase{model.PhaseMember, model.PhaseMember, model.PhaseCatchingUp}, lags: []int64{0, 0, 10}},
		{name: "leader without a frontier: every lag unknown, never 0", thr: 100,
			mutate: func(o *model.Observation) { o.Members[0].Engine.Document.Frontier = nil },
			want:   []string{"lag_unknown@m-1", "lag_unknown@m-2"}, lags: []int64{-1, -1, -1}},
		{name: "member without an applied position", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.Document.Applied = nil },
			want:   []string{"lag_unknown@m-2"}, lags: []int64{0, 0, -1}},
		{name: "leader unreachable", thr: 100,
			mutate: func(o *model.Observation) {
				o.Members[0].Engine = &model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: "deadline exceeded"}
			},
			want: []string{"lag_unknown@m-1", "lag_unknown@m-2", "leader_missing@", "member_unreachable@m-0"}, lags: []int64{-1, -1, -1}},
		{name: "followers name the unreachable leader", thr: 100,
			mutate: func(o *model.Observation) {
				o.Members[0].Engine = &model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: "deadline exceeded"}
				o.Members[1].Engine.LeaderID, o.Members[2].Engine.LeaderID = "m-0", "m-0"
			},
			want: []string{"lag_unknown@m-1", "lag_unknown@m-2", "member_unreachable@m-0"}, lags: []int64{-1, -1, -1}},
		{name: "two leaders", thr: 100,
			mutate: func(o *model.Observation) { o.Members[1].Engine.LeaderID = "m-1" },
			want:   []string{"lag_unknown@m-0", "lag_unknown@m-1", "lag_unknown@m-2", "leader_disagreement@"}},
		{name: "a follower names another leader: the claim is not believed", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.LeaderID = "m-1" },
			want:   []string{"lag_unknown@m-0", "lag_unknown@m-1", "lag_unknown@m-2", "leader_disagreement@"}, lags: []int64{-1, -1, -1}},
		{name: "a deposed leader answers, the new one does not: no frontier, never lag 0", thr: 100,
			mutate: func(o *model.Observation) {
				o.Members[0].Engine.Document.Frontier, o.Members[0].Engine.RaftTerm = u64(500), 4
				o.Members[1].Engine = &model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: "deadline exceeded"}
				o.Members[2].Engine.LeaderID, o.Members[2].Engine.RaftTerm, o.Members[2].Engine.Document.Applied = "m-1", 5, u64(900)
			},
			want: []string{"lag_unknown@m-0", "lag_unknown@m-2", "leader_disagreement@", "member_unreachable@m-1"},
			lags: []int64{-1, -1, -1}, phases: []model.Phase{model.PhaseUnknown, model.PhaseUnknown, model.PhaseUnknown}},
		{name: "a learner whose facts carry no document", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.IsLearner, o.Members[2].Engine.Document = true, nil },
			want:   []string{"learner_pending@m-2"}, lags: []int64{0, 0, -1}},
		{name: "a document the mapping cannot read", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.Document.Problem = "applied: yields a map" },
			want:   []string{"engine_config_invalid@m-2"}},
		{name: "cluster ID split", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.ClusterID = "c2" },
			want:   []string{"cluster_id_split@", "cluster_id_split@m-2"},
			phases: []model.Phase{model.PhaseMember, model.PhaseMember, model.PhaseDiverged}, lags: []int64{0, 0, -1}},
		{name: "not ready", thr: 100,
			mutate: func(o *model.Observation) { o.Members[1].Engine.Document.Ready = yes(false) },
			want:   []string{"member_not_ready@m-1"}, phases: []model.Phase{model.PhaseMember, model.PhaseJoining, model.PhaseMember}},
		{name: "paused", thr: 100,
			mutate: func(o *model.Observation) { o.Members[1].Engine.Document.Paused = true },
			want:   []string{"maintenance_paused@"}},
		{name: "learner", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.IsLearner = true },
			want:   []string{"learner_pending@m-2"}},
		{name: "quorum lost", thr: 100,
			mutate: func(o *model.Observation) {
				for i := 1; i < 3; i++ {
					o.Members[i].Engine = &model.EngineFacts{Failure: model.ProbeFailureConnect, Err: "refused"}
				}
			},
			want: []string{"member_unreachable@m-1", "member_unreachable@m-2", "quorum_unavailable@"}},
		{name: "quorum leader: the leader alone keeps control", thr: 100,
			mutate: func(o *model.Observation) {
				o.Cluster.EngineConfig["quorum"] = QuorumLeader
				for i := 1; i < 3; i++ {
					o.Members[i].Engine = &model.EngineFacts{Failure: model.ProbeFailureConnect, Err: "refused"}
				}
			},
			want: []string{"member_unreachable@m-1", "member_unreachable@m-2"}},
		{name: "credentials refused", thr: 100,
			mutate: func(o *model.Observation) {
				o.Members[2].Engine = &model.EngineFacts{Failure: model.ProbeFailureCredentials, Err: "HTTP 401"}
			},
			want: []string{"credentials_unavailable@m-2"}},
		{name: "versions differ", thr: 100,
			mutate: func(o *model.Observation) { o.Members[2].Engine.Version = "1.1" },
			want:   []string{"version_mismatch@"}},
		{name: "no mapping", thr: 100,
			mutate: func(o *model.Observation) {
				o.Cluster.EngineConfig, o.Cluster.EngineConfigErr = nil, `ConfigMap "x" named by annotation hactl.dev/engine-config does not exist`
			},
			want: []string{"engine_config_invalid@"}},
		{name: "invalid mapping: nothing else is guessed", thr: 100,
			mutate: func(o *model.Observation) {
				o.Cluster.EngineConfig["port"] = "x"
				for i := 1; i < 3; i++ {
					o.Members[i].Engine = &model.EngineFacts{Failure: model.ProbeFailureOther, Err: "the mapping is not valid"}
				}
			},
			want: []string{"engine_config_invalid@"}, lags: []int64{-1, -1, -1},
			phases: []model.Phase{model.PhaseUnknown, model.PhaseUnknown, model.PhaseUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := cluster()
			if tc.mutate != nil {
				tc.mutate(&obs)
			}
			j := judgeOf(obs, tc.thr)
			if got := codes(j); !slices.Equal(got, tc.want) {
				t.Errorf("reasons %v, want %v\n%+v", got, tc.want, j.Reasons)
			}
			for i, want := range tc.phases {
				if j.Phases[i] != want {
					t.Errorf("%s phase %s, want %s", obs.Members[i].Name, j.Phases[i], want)
				}
			}
			for i, want := range tc.lags {
				switch got := j.Lags[i]; {
				case want < 0 && got != nil:
					t.Errorf("%s lag %d, want unknown", obs.Members[i].Name, *got)
				case want >= 0 && (got == nil || *got != want):
					t.Errorf("%s lag %v, want %d", obs.Members[i].Name, lag(j, i), want)
				}
			}
			for _, r := range j.Reasons {
				if strings.TrimSpace(r.Detail) == "" {
					t.Errorf("%s has no detail", r.Code)
				}
			}
		})
	}
}

func TestJudgeWithoutProbesReadsPodsOnly(t *testing.T) {
	obs := cluster()
	obs.EngineProbed = false
	j := judgeOf(obs, 100)
	if len(j.Reasons) != 0 || j.Frontier != nil {
		t.Errorf("reasons %v, frontier %v without probes", codes(j), j.Frontier)
	}
	for i, l := range j.Lags {
		if l != nil {
			t.Errorf("member %d lag %d without probes", i, *l)
		}
	}
}

func TestLagThresholdIsTheMappingsElseTheUsers(t *testing.T) {
	c := model.ClusterFacts{EngineConfig: map[string]string{"port": "80", "role": "{.role}", "lagThreshold": "4096"}}
	if got := (Rules{}).LagThreshold(model.Thresholds{Lag: 1000}, c); got != 4096 {
		t.Errorf("threshold %d, want the mapping's 4096", got)
	}
	delete(c.EngineConfig, "lagThreshold")
	if got := (Rules{}).LagThreshold(model.Thresholds{Lag: 1000}, c); got != 1000 {
		t.Errorf("threshold %d, want the user's 1000", got)
	}
}

// TestRecreatesOnlyWhereTheMappingSaysSo: replace by delete-and-recreate
// is offered where the mapping says replace: recreate (the shipped
// Patroni mapping), never for etcd's (a new etcd member must be added to
// the member list first), and not when the mapping cannot be read.
func TestRecreatesOnlyWhereTheMappingSaysSo(t *testing.T) {
	for _, c := range []struct {
		name string
		data map[string]string
		want bool
		why  string
	}{
		{"patroni", example(t, "patroni"), true, ""},
		{"etcd", example(t, "etcd"), false, "does not say replace: recreate"},
		{"broken", map[string]string{"port": "80", "role": "{.role}", "replace": "yes"}, false, "cannot be read"},
	} {
		ok, why := Rules{}.Recreates(model.ClusterFacts{EngineConfig: c.data})
		if ok != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q, want %v %q", c.name, ok, why, c.want, c.why)
		}
	}
	missing := model.ClusterFacts{EngineConfigErr: `ConfigMap "pg-map" named by annotation hactl.dev/engine-config does not exist`}
	if ok, why := (Rules{}).Recreates(missing); ok || !strings.Contains(why, `ConfigMap "pg-map"`) {
		t.Errorf("a missing mapping: %v %q", ok, why)
	}
}
