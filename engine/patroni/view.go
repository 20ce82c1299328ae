package patroni

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// View shows Patroni clusters in hactl's views (model.EngineView):
// Patroni's own roles (primary, replica, sync-standby, …), lag in bytes of
// WAL against the primary's position, the leader lock and modes, and
// whether each replica streams from the primary.
type View struct{}

var _ model.EngineView = View{}

// View implements engine.Viewed.
func (Engine) View() model.EngineView { return View{} }

// Role is Patroni's name for m's role.
func (View) Role(m model.Member) string {
	if e := m.Engine; e != nil && e.Patroni != nil && e.Reachable {
		return e.Patroni.RoleName()
	}
	return m.Engine.Role().String()
}

// Leads: m answers as the writable primary.
func (View) Leads(m model.Member) bool {
	e := m.Engine
	return e != nil && e.Reachable && e.Patroni.Writable()
}

func (View) LagText(l *int64) string  { return format.WALLag(l) }
func (View) LagUnit() string          { return "bytes of WAL" }
func (View) Position(p uint64) string { return format.LSN(p) }

func (View) Frontier(f uint64, leader string) string {
	return fmt.Sprintf("frontier: WAL position %s of primary %s", format.LSN(f), format.Dash(leader))
}

// Columns: Patroni's state and the timeline, as status prints them.
func (View) Columns() []model.ViewColumn {
	return []model.ViewColumn{{Title: "STATE", Min: 5, Max: 20, Drop: 2}, {Title: "TL", Max: 5, Drop: 7}}
}

func (View) Cells(m model.Member) []string {
	if e := m.Engine; e != nil && e.Reachable && e.Patroni != nil {
		tl := "-"
		if e.Patroni.Timeline > 0 {
			tl = strconv.FormatInt(e.Patroni.Timeline, 10)
		}
		return []string{format.Dash(e.Patroni.State), tl}
	}
	return []string{"-", "-"}
}

// Candidate: a member that does not answer as the primary.
func (View) Candidate(m model.Member) bool {
	if m.Name == "" || m.Engine == nil || m.Engine.Patroni == nil {
		return false
	}
	return !m.Engine.Patroni.Writable()
}

// Summary is the leader lock (not read when the cluster's Patroni facts
// are nil), maintenance mode, synchronous mode and who answered.
func (View) Summary(obs model.Observation, v model.Votes) []string {
	return summary(obs.Cluster.Patroni, v, obs.At)
}

// Section is the replication: whether the primary lists each replica as
// streaming.
func (View) Section(obs model.Observation, _ uint64, _ func(string) string) (string, []string, string) {
	return "Replication", replicationLines(obs), ""
}

func summary(p *model.PatroniClusterFacts, v model.Votes, at time.Time) []string {
	var q []string
	switch {
	case p == nil:
		return []string{"leader lock not read", fmt.Sprintf("answering %d/%d", v.Answering, v.Voters)}
	case p.ObjectsErr != "":
		q = append(q, "leader lock not read")
	case !p.LockFound:
		q = append(q, "no leader lock object")
	case p.LockHolder == "":
		q = append(q, "leader lock free")
	default:
		l := "lock " + p.LockHolder
		if !p.LockRenew.IsZero() && !at.IsZero() {
			l += ", renewed " + format.Age(p.LockRenew, at) + " ago"
		}
		if p.LockStale(at) {
			l += " (stale)"
		}
		q = append(q, l)
	}
	if p.LockTTL > 0 {
		q = append(q, "ttl "+p.LockTTL.String())
	}
	if p.SynchronousMode {
		q = append(q, "synchronous, standby "+format.Dash(p.SyncStandby))
	}
	if p.Paused {
		q = append(q, "PAUSED")
	}
	if p.DCS != "" {
		q = append(q, "DCS on "+p.DCS)
	}
	if p.Orphaned != "" {
		other := model.DCSEndpoints
		if p.DCS == model.DCSEndpoints {
			other = model.DCSConfigMaps
		}
		q = append(q, "an orphaned leader record on "+other+" ignored")
	}
	q = append(q, fmt.Sprintf("answering %d/%d", v.Answering, v.Voters))
	return q
}

// replicationLines say, for each replica, whether the primary lists it as
// streaming (its pg_stat_replication, as Patroni reports it).
func replicationLines(obs model.Observation) []string {
	var primary *model.PatroniFacts
	for _, m := range obs.Members {
		if e := m.Engine; e != nil && e.Reachable && e.Patroni.Writable() {
			primary = e.Patroni
		}
	}
	if primary == nil {
		return []string{"no primary answered: replication unknown"}
	}
	var out []string
	for _, m := range obs.Members {
		e := m.Engine
		if e != nil && e.Reachable && e.Patroni.Writable() {
			continue
		}
		if rep, ok := primary.Streaming(m.Name); ok {
			out = append(out, fmt.Sprintf("%s: streaming from the primary (%s)", m.Name, format.Dash(rep.SyncState)))
		} else {
			out = append(out, m.Name+": not streaming from the primary")
		}
	}
	if len(out) == 0 {
		out = append(out, "no replicas")
	}
	return out
}

var _ model.TableView = View{}

// TableColumns: Patroni's role, the state PostgreSQL reported and its
// timeline; with -o wide the system identifier and the WAL positions
// (written, received, replayed).
func (View) TableColumns() (narrow, wide []string) {
	return []string{"ROLE", "STATE", "TL"}, []string{"SYSTEM ID", "WAL", "RECEIVED", "REPLAYED"}
}

// TableCells are m's cells under TableColumns.
func (v View) TableCells(m model.Member) (narrow, wide []string) {
	e := m.Engine
	if e == nil {
		e = &model.EngineFacts{}
	}
	p := e.Patroni
	if p == nil {
		p = &model.PatroniFacts{}
	}
	pos := func(l *int64) string {
		if l == nil {
			return "-"
		}
		return strconv.FormatInt(*l, 10)
	}
	return []string{v.Role(m), format.Dash(p.State), format.Count(uint64(max(p.Timeline, 0)))},
		[]string{format.Dash(e.ClusterID), pos(p.WALLocation), pos(p.ReceivedLocation), pos(p.ReplayedLocation)}
}
