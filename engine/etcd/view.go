package etcd

import (
	"fmt"
	"strconv"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// View shows etcd clusters in hactl's views (model.EngineView): raft
// roles, lag in raft entries against the leader's applied index, the
// quorum arithmetic, and the learners' catch-up.
type View struct{}

var _ model.EngineView = View{}

// View implements engine.Viewed.
func (Engine) View() model.EngineView { return View{} }

func (View) Role(m model.Member) string  { return m.Engine.Role().String() }
func (View) Leads(m model.Member) bool   { return m.Engine.Role() == model.RoleLeader }
func (View) LagText(l *int64) string     { return format.Lag(l) }
func (View) LagUnit() string             { return "entries" }
func (View) Candidate(model.Member) bool { return false }
func (View) Position(p uint64) string    { return strconv.FormatUint(p, 10) }
func (View) Columns() []model.ViewColumn { return nil }
func (View) Cells(model.Member) []string { return nil }
func (View) Frontier(f uint64, l string) string {
	return fmt.Sprintf("frontier %d from leader %s", f, format.Dash(l))
}

// Summary is the quorum arithmetic.
func (View) Summary(_ model.Observation, v model.Votes) []string {
	return []string{
		fmt.Sprintf("voters %d", v.Voters),
		fmt.Sprintf("quorum %d", v.Quorum),
		fmt.Sprintf("tolerates %d", v.Tolerance),
		fmt.Sprintf("answering %d/%d", v.Answering, v.Voters),
	}
}

// Section is the learners' catch-up.
func (View) Section(obs model.Observation, thr uint64, trend func(string) string) (title string, lines []string, none string) {
	for _, m := range obs.Members {
		if m.Engine == nil || !m.Engine.IsLearner {
			continue
		}
		lines = append(lines, learnerLine(m, thr, trend(m.Name)))
	}
	return "Learners", lines, "none: every answering member votes"
}

// learnerLine describes one learner's catch-up.
func learnerLine(m model.Member, thr uint64, trend string) string {
	s := m.Name + ": "
	switch {
	case m.Lag == nil:
		s += "lag unknown (no leader frontier)"
	case uint64(*m.Lag) <= thr:
		s += strconv.FormatInt(*m.Lag, 10) + " entries behind, within the threshold: ready to be promoted"
	default:
		s += fmt.Sprintf("%d entries behind, %d above the threshold", *m.Lag, uint64(*m.Lag)-thr)
	}
	if trend != "" {
		s += " (" + trend + ")"
	}
	return s
}

var _ model.TableView = View{}

// TableColumns: raft roles and member IDs; with -o wide the cluster ID,
// term, index, applied index and database size.
func (View) TableColumns() (narrow, wide []string) {
	return []string{"ROLE", "MEMBER ID"}, []string{"CLUSTER ID", "TERM", "INDEX", "APPLIED", "DB SIZE"}
}

// TableCells are m's cells under TableColumns.
func (v View) TableCells(m model.Member) (narrow, wide []string) {
	e := m.Engine
	if e == nil {
		e = &model.EngineFacts{}
	}
	return []string{v.Role(m), format.Dash(e.MemberID)},
		[]string{format.Dash(e.ClusterID), format.Count(e.RaftTerm), format.Count(e.RaftIndex), format.Count(e.RaftApplied), format.Size(e.DBSize)}
}
