package tui

import (
	"fmt"
	"strconv"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// etcdView shows etcd clusters: raft roles, lag in raft entries against
// the leader's applied index, the quorum arithmetic, and the learners'
// catch-up.
type etcdView struct{}

func (etcdView) role(mem model.Member) string { return mem.Engine.Role().String() }
func (etcdView) leads(mem model.Member) bool  { return mem.Engine.Role() == model.RoleLeader }
func (etcdView) lagText(l *int64) string      { return format.Lag(l) }
func (etcdView) lagUnit() string              { return "entries" }
func (etcdView) candidate(model.Member) bool  { return false }
func (etcdView) position(p uint64) string     { return strconv.FormatUint(p, 10) }
func (etcdView) columns() []column            { return nil }
func (etcdView) cells(model.Member) []string  { return nil }

func (etcdView) frontier(f uint64, leader string) string {
	return fmt.Sprintf("frontier %d from leader %s", f, format.Dash(leader))
}

func (etcdView) summary(r status.Result) []string {
	a := r.Analysis
	return []string{
		fmt.Sprintf("voters %d", a.Voters),
		fmt.Sprintf("quorum %d", a.Quorum),
		fmt.Sprintf("tolerates %d", a.Tolerance),
		fmt.Sprintf("answering %d/%d", a.AnsweringVoters, a.Voters),
	}
}

func (etcdView) section(r status.Result, thr uint64, trend func(string) string) (title string, lines []string, none string) {
	for _, mem := range r.Observation.Members {
		if mem.Engine == nil || !mem.Engine.IsLearner {
			continue
		}
		lines = append(lines, learnerLine(mem, thr, trend(mem.Name)))
	}
	return "Learners", lines, "none: every answering member votes"
}

// learnerLine describes one learner's catch-up.
func learnerLine(mem model.Member, thr uint64, trend string) string {
	s := mem.Name + ": "
	switch {
	case mem.Lag == nil:
		s += "lag unknown (no leader frontier)"
	case uint64(*mem.Lag) <= thr:
		s += strconv.FormatInt(*mem.Lag, 10) + " entries behind, within the threshold: ready to be promoted"
	default:
		s += fmt.Sprintf("%d entries behind, %d above the threshold", *mem.Lag, uint64(*mem.Lag)-thr)
	}
	if trend != "" {
		s += " (" + trend + ")"
	}
	return s
}
