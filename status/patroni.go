package status

import (
	"strconv"
	"strings"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// patroniStatus is Patroni's part of status: Patroni's own roles and
// facts in the document, and the member table's PostgreSQL columns (what
// its DCS keeps is decoded by engine/patroni's Keeper).
type patroniStatus struct{}

func (patroniStatus) member(ms *MemberStatus, e *model.EngineFacts) {
	if e.Patroni != nil {
		ms.Patroni = e.Patroni
		ms.Role = e.Patroni.RoleName()
	}
}

func (patroniStatus) columns(o TableOptions) []string { return patroniColumns(o) }

func (patroniStatus) row(m MemberStatus, o TableOptions) []string { return patroniRow(m, o) }

// patroniColumns are a Patroni cluster's member columns: the role and
// state each member's PostgreSQL reported, its timeline, and its lag in
// bytes of WAL behind the primary (with -o wide, its WAL positions).
func patroniColumns(o TableOptions) []string {
	cols := []string{"ORD", "POD", "NODE", "ROLE", "STATE", "TL", "PHASE", "READY", "LAG", "VERSION", "RESTARTS", "AGE", "REASONS"}
	if o.Wide {
		cols = append(cols, "PVC", "SYSTEM ID", "WAL", "RECEIVED", "REPLAYED", "PROBE")
	}
	return cols
}

func patroniRow(m MemberStatus, o TableOptions) []string {
	p := m.Patroni
	if p == nil {
		p = &model.PatroniFacts{}
	}
	row := []string{
		strconv.Itoa(m.Ordinal), format.Dash(m.Pod), format.Dash(m.Node), m.Role, format.Dash(p.State), num(uint64(max(p.Timeline, 0))), m.Phase,
		strconv.FormatBool(m.Ready), format.WALLag(m.Lag), format.Dash(m.Version), strconv.Itoa(m.Restarts),
		format.Age(ptrTime(m.CreatedAt), o.Now), format.Dash(strings.Join(m.Reasons, ",")),
	}
	if !o.Wide {
		return row
	}
	pos := func(l *int64) string {
		if l == nil {
			return "-"
		}
		return strconv.FormatInt(*l, 10)
	}
	return append(row, pvcCell(m), format.Dash(m.ClusterID), pos(p.WALLocation), pos(p.ReceivedLocation), pos(p.ReplayedLocation), probeCell(m))
}
