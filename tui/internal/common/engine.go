package common

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// EngineViews are the engines' views, by engine, as the faces handed them
// in (Config.Views): how one engine's facts read — its members' roles,
// its unit of lag, its frontier, the cluster's summary line and the
// readiness view's section below the member table. The views name no
// engine: they ask the cluster's view (Of), which each engine keeps in its
// own package.
type EngineViews map[model.Engine]model.EngineView

// Of is the view of cluster c's engine, plainView when none was handed
// in.
func (vs EngineViews) Of(c model.ClusterFacts) model.EngineView {
	if v, ok := vs[c.Engine]; ok && v != nil {
		return v
	}
	return plainView{}
}

// votesOf are the counts of a the views show.
func votesOf(a model.Analysis) model.Votes {
	return model.Votes{Voters: a.Voters, Quorum: a.Quorum, Tolerance: a.Tolerance, Answering: a.AnsweringVoters}
}

// plainView shows a cluster of an engine that handed in no view: what its
// members' generic facts say in positions, nothing engine-specific (and,
// when it has no verdict rules either, that hactl only read the API
// server).
type plainView struct{}

func (plainView) Role(m model.Member) string  { return m.Engine.Role().String() }
func (plainView) Leads(m model.Member) bool   { return m.Engine.Role() == model.RoleLeader }
func (plainView) LagText(l *int64) string     { return format.Lag(l) }
func (plainView) LagUnit() string             { return "positions" }
func (plainView) Candidate(model.Member) bool { return false }
func (plainView) Position(p uint64) string    { return strconv.FormatUint(p, 10) }
func (plainView) Columns() []model.ViewColumn { return nil }
func (plainView) Cells(model.Member) []string { return nil }
func (plainView) Section(model.Observation, uint64, func(string) string) (string, []string, string) {
	return "", nil, ""
}

func (plainView) Frontier(f uint64, leader string) string {
	return fmt.Sprintf("frontier %d from leader %s", f, format.Dash(leader))
}

// Summary: the engine's name and the quorum arithmetic (a cluster
// whose engine has no verdict rules either shows noRules instead).
func (plainView) Summary(obs model.Observation, v model.Votes) []string {
	return []string{"engine " + obs.Cluster.Engine.String(),
		fmt.Sprintf("voters %d", v.Voters), fmt.Sprintf("quorum %d", v.Quorum),
		fmt.Sprintf("tolerates %d", v.Tolerance), fmt.Sprintf("answering %d/%d", v.Answering, v.Voters)}
}

// SummaryOf is the cluster-wide part of r's summary line: its engine's
// view's, or, for an engine with no view and no verdict rules, that hactl
// only read the API server.
func (vs EngineViews) SummaryOf(r status.Result) []string {
	v := vs.Of(r.Observation.Cluster)
	if _, plain := v.(plainView); plain && slices.ContainsFunc(r.Verdict.Reasons, func(x model.Reason) bool { return x.Code == model.ReasonEngineUnsupported }) {
		return []string{"engine " + format.Dash(r.Observation.Cluster.Engine.String()) + ": no rules, members from the API server only"}
	}
	return v.Summary(r.Observation, votesOf(r.Analysis))
}

// FilterMembers are the members of r whose name, phase, role or node
// contain f (lower case; "" keeps all).
func FilterMembers(views EngineViews, r status.Result, f string) []model.Member {
	if f == "" {
		return r.Observation.Members
	}
	var out []model.Member
	for _, mem := range r.Observation.Members {
		hay := mem.Name + " " + mem.Phase.String() + " " + views.Of(r.Observation.Cluster).Role(mem)
		if mem.Pod != nil {
			hay += " " + mem.Pod.Node
		}
		if strings.Contains(strings.ToLower(hay), f) {
			out = append(out, mem)
		}
	}
	return out
}
