package tui

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// patroniView shows Patroni clusters: Patroni's own roles (primary,
// replica, sync-standby, …), lag in bytes of WAL against the primary's
// position, the leader lock and modes, and whether each replica streams
// from the primary.
type patroniView struct{}

func (patroniView) role(mem model.Member) string {
	if e := mem.Engine; e != nil && e.Patroni != nil && e.Reachable {
		return status.PatroniRole(e.Patroni)
	}
	return mem.Engine.Role().String()
}

func (patroniView) leads(mem model.Member) bool {
	e := mem.Engine
	return e != nil && e.Reachable && e.Patroni.Writable()
}

func (patroniView) lagText(l *int64) string { return format.WALLag(l) }
func (patroniView) lagUnit() string         { return "bytes of WAL" }

func (patroniView) frontier(f uint64, leader string) string {
	return fmt.Sprintf("frontier: WAL position %s of primary %s", format.LSN(f), format.Dash(leader))
}

func (patroniView) position(p uint64) string { return format.LSN(p) }

// columns: Patroni's state and the timeline, as status prints them.
func (patroniView) columns() []column {
	return []column{{title: "STATE", min: 5, max: 20, drop: 2}, {title: "TL", max: 5, drop: 7}}
}

func (patroniView) cells(mem model.Member) []string {
	if e := mem.Engine; e != nil && e.Reachable && e.Patroni != nil {
		tl := "-"
		if e.Patroni.Timeline > 0 {
			tl = strconv.FormatInt(e.Patroni.Timeline, 10)
		}
		return []string{format.Dash(e.Patroni.State), tl}
	}
	return []string{"-", "-"}
}

// candidate: a member that does not answer as the primary.
func (patroniView) candidate(mem model.Member) bool {
	if mem.Name == "" || mem.Engine == nil || mem.Engine.Patroni == nil {
		return false
	}
	return !mem.Engine.Patroni.Writable()
}

func (patroniView) summary(r status.Result) []string {
	return patroniSummary(r.Observation.Cluster.Patroni, r.Analysis, r.Observation.At)
}

func (patroniView) section(r status.Result, _ uint64, _ func(string) string) (string, []string, string) {
	return "Replication", replicationLines(r), ""
}

// patroniSummary is a Patroni cluster's second summary line: the leader
// lock (not read when p is nil), maintenance mode, synchronous mode and
// who answered.
func patroniSummary(p *model.PatroniClusterFacts, a verdict.Analysis, at time.Time) []string {
	var q []string
	switch {
	case p == nil:
		return []string{"leader lock not read", fmt.Sprintf("answering %d/%d", a.AnsweringVoters, a.Voters)}
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
	q = append(q, fmt.Sprintf("answering %d/%d", a.AnsweringVoters, a.Voters))
	return q
}

// replicationLines say, for each replica of a Patroni cluster, whether the
// primary lists it as streaming (its pg_stat_replication, as Patroni
// reports it).
func replicationLines(r status.Result) []string {
	var primary *model.PatroniFacts
	for _, mem := range r.Observation.Members {
		if e := mem.Engine; e != nil && e.Reachable && e.Patroni.Writable() {
			primary = e.Patroni
		}
	}
	if primary == nil {
		return []string{"no primary answered: replication unknown"}
	}
	var out []string
	for _, mem := range r.Observation.Members {
		e := mem.Engine
		if e != nil && e.Reachable && e.Patroni.Writable() {
			continue
		}
		if rep, ok := primary.Streaming(mem.Name); ok {
			out = append(out, fmt.Sprintf("%s: streaming from the primary (%s)", mem.Name, format.Dash(rep.SyncState)))
		} else {
			out = append(out, mem.Name+": not streaming from the primary")
		}
	}
	if len(out) == 0 {
		out = append(out, "no replicas")
	}
	return out
}
