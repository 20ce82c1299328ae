package status

import (
	"fmt"
	"slices"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// LeaderSeen is the leader one observation agreed on.
type LeaderSeen struct {
	// At is when Leader was first seen leading, LastSeen when last.
	At, LastSeen time.Time
	Leader       string
	// Term is its raft term (etcd), 0 when not read.
	Term uint64
}

// leaderLogLen bounds each cluster's LeaderLog.
const leaderLogLen = 50

// LeaderLog keeps, per cluster, the leaders a long-running view (the
// live view) observed, one entry per change (the last leaderLogLen), for
// the timeline. Observations that read no leader leave it as it was.
type LeaderLog map[string][]LeaderSeen

func leaderKey(c model.ClusterFacts) string { return c.Namespace + "/" + c.Name }

// Add records the leader each result agreed on, when it differs from
// the last one recorded for its cluster.
func (l LeaderLog) Add(rs []Result) {
	for _, r := range rs {
		o := r.Observation
		leader := r.Analysis.LeaderMember
		if !o.EngineProbed || leader == "" || o.At.IsZero() {
			continue
		}
		k := leaderKey(o.Cluster)
		seen := l[k]
		if n := len(seen); n > 0 && seen[n-1].Leader == leader {
			seen[n-1].LastSeen = o.At
			continue
		}
		s := LeaderSeen{At: o.At, LastSeen: o.At, Leader: leader}
		for _, m := range o.Members {
			if e := m.Engine; e != nil && e.Reachable && m.Name == leader {
				s.Term = e.RaftTerm
			}
		}
		seen = append(seen, s)
		if len(seen) > leaderLogLen {
			seen = seen[len(seen)-leaderLogLen:]
		}
		l[k] = seen
	}
}

// Of is what l recorded for cluster c, oldest first.
func (l LeaderLog) Of(c model.ClusterFacts) []LeaderSeen { return l[leaderKey(c)] }

// seenRows are the leader changes in seen (one row per change; the first
// entry is where the record starts, not a change).
func seenRows(seen []LeaderSeen) []HistoryRow {
	var out []HistoryRow
	for i := 1; i < len(seen); i++ {
		prev, cur := seen[i-1], seen[i]
		d := fmt.Sprintf("%s leads", cur.Leader)
		if cur.Term > 0 {
			d += fmt.Sprintf(" (term %d)", cur.Term)
		}
		d += fmt.Sprintf("; %s led until at least %s, as this view saw", prev.Leader, prev.LastSeen.UTC().Format(time.DateTime))
		out = append(out, HistoryRow{At: cur.At, Source: SourceObserved, Member: cur.Leader, Event: "leader-change", Detail: d})
	}
	return out
}

// receiptLeaderRows are the leader changes hactl's actions saw: the
// leader each receipt recorded (the one the action's decision for that
// step agreed on, before the step ran), in time order across the
// ledger's entries, one row where it differs from the receipt before.
func receiptLeaderRows(ledger []model.LedgerEntry) []HistoryRow {
	type seen struct {
		at             time.Time
		leader, action string
	}
	var all []seen
	for _, e := range ledger {
		for _, rc := range e.Receipts {
			if rc.Leader != "" && rc.DryRun == "" {
				all = append(all, seen{rc.At, rc.Leader, string(e.Action) + " " + e.ID})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b seen) int { return a.at.Compare(b.at) })
	var out []HistoryRow
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.leader == prev.leader {
			continue
		}
		out = append(out, HistoryRow{At: cur.at, Source: SourceObserved, Member: cur.leader, Event: "leader-change",
			Detail: fmt.Sprintf("%s leads, as %s decided its step; %s led when %s decided the step it recorded at %s", cur.leader, cur.action, prev.leader, prev.action, prev.at.UTC().Format(time.DateTime))})
	}
	return out
}
