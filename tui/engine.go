package tui

import (
	"slices"
	"strconv"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// engineView is how one engine's facts read in the views: its members'
// roles, its unit of lag, its frontier, the cluster's summary line and the
// readiness view's section below the member table. The views name no
// engine: they ask the cluster's engineView (viewOf), and an engine keeps
// its view in its own file (etcd: etcd.go, Patroni: patroni.go), as the
// verdict and the classifier keep their rules.
type engineView interface {
	// role is mem's role as the engine names it.
	role(mem model.Member) string
	// leads reports whether mem is the member writes go to.
	leads(mem model.Member) bool
	// lagText prints a lag in the engine's unit ("?" when unknown), and
	// lagUnit names the unit.
	lagText(l *int64) string
	lagUnit() string
	// frontier is the readiness view's head when the leader's frontier f
	// is known.
	frontier(f uint64, leader string) string
	// summary is the cluster-wide part of the cluster view's second
	// summary line (the frontier follows it).
	summary(r status.Result) []string
	// section is the readiness view's section below its table: a title,
	// its lines (wrapped by the view) and what it says, dimmed, when it
	// has none; thr is the lag threshold and trend a member's recent
	// lags. No title: no section.
	section(r status.Result, thr uint64, trend func(member string) string) (title string, lines []string, none string)
	// candidate reports whether mem, selected, may be named as a
	// switchover's candidate (else the classifier chooses).
	candidate(mem model.Member) bool
	// position prints a position in the engine's terms (a raft index, a
	// PostgreSQL LSN).
	position(p uint64) string
	// columns are the engine's own member-table columns (after PHASE)
	// and cells one member's, as many.
	columns() []column
	cells(mem model.Member) []string
}

// views maps each engine to its view; viewOf falls back to plainView.
var views = map[model.Engine]engineView{
	model.EngineEtcd:    etcdView{},
	model.EnginePatroni: patroniView{},
}

// viewOf is the view of cluster c's engine.
func viewOf(c model.ClusterFacts) engineView {
	if v, ok := views[c.Engine]; ok {
		return v
	}
	return plainView{}
}

// plainView shows a cluster of an engine hactl has no rules for: what its
// members' generic facts say, nothing engine-specific (its verdict is
// engine_unsupported).
type plainView struct{}

func (plainView) role(mem model.Member) string            { return mem.Engine.Role().String() }
func (plainView) leads(mem model.Member) bool             { return mem.Engine.Role() == model.RoleLeader }
func (plainView) lagText(l *int64) string                 { return format.Lag(l) }
func (plainView) lagUnit() string                         { return "positions" }
func (plainView) frontier(f uint64, leader string) string { return etcdView{}.frontier(f, leader) }
func (plainView) candidate(model.Member) bool             { return false }
func (plainView) position(p uint64) string                { return strconv.FormatUint(p, 10) }
func (plainView) columns() []column                       { return nil }
func (plainView) cells(model.Member) []string             { return nil }

// summary: a cluster whose engine has rules (in its own package) shows
// the same arithmetic as etcd's; one whose engine has none, that hactl
// only read the API server.
func (plainView) summary(r status.Result) []string {
	if !slices.ContainsFunc(r.Verdict.Reasons, func(x model.Reason) bool { return x.Code == model.ReasonEngineUnsupported }) {
		return append([]string{"engine " + r.Observation.Cluster.Engine.String()}, etcdView{}.summary(r)...)
	}
	return []string{"engine " + format.Dash(r.Observation.Cluster.Engine.String()) + ": no rules, members from the API server only"}
}

func (plainView) section(status.Result, uint64, func(string) string) (string, []string, string) {
	return "", nil, ""
}
