package status

import (
	"strconv"
	"strings"

	"github.com/hactl-dev/hactl/internal/format"

	"github.com/hactl-dev/hactl/model"
)

// etcdStatus is etcd's part of status: raft facts in the document, and the member table's
// raft columns (with -o wide: term, index, applied index, database size).
type etcdStatus struct{}

func (etcdStatus) member(*MemberStatus, *model.EngineFacts) {}

func (etcdStatus) columns(o TableOptions) []string {
	cols := []string{"ORD", "POD", "NODE", "ROLE", "MEMBER ID", "PHASE", "READY", "LAG", "VERSION", "RESTARTS", "AGE", "REASONS"}
	if o.Wide {
		cols = append(cols, "PVC", "CLUSTER ID", "TERM", "INDEX", "APPLIED", "DB SIZE", "PROBE")
	}
	return cols
}

func (etcdStatus) row(m MemberStatus, o TableOptions) []string { return memberRow(m, o) }

// memberRow is one member's row (with -o wide, its volume and probe too).
func memberRow(m MemberStatus, o TableOptions) []string {
	row := []string{
		strconv.Itoa(m.Ordinal), format.Dash(m.Pod), format.Dash(m.Node), m.Role, format.Dash(m.MemberID), m.Phase,
		strconv.FormatBool(m.Ready), format.Lag(m.Lag), format.Dash(m.Version), strconv.Itoa(m.Restarts),
		format.Age(ptrTime(m.CreatedAt), o.Now), format.Dash(strings.Join(m.Reasons, ",")),
	}
	if !o.Wide {
		return row
	}
	return append(row, pvcCell(m), format.Dash(m.ClusterID), num(m.RaftTerm), num(m.RaftIndex), num(m.RaftAppliedIndex),
		format.Size(m.DBSize), probeCell(m))
}
