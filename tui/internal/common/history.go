package common

import (
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// HistoryLen is how many probes of lag each member keeps.
const HistoryLen = 120

// lagSample is one probe's view of one member.
type lagSample struct {
	at      time.Time
	lag     *int64
	learner bool
}

// LagHistory keeps, per member (namespace/cluster/member), the lag of the
// last probes, for the readiness view.
type LagHistory map[string][]lagSample

// MemberHistoryKey is the key of a member's samples.
func MemberHistoryKey(c model.ClusterFacts, member string) string {
	return c.Namespace + "/" + c.Name + "/" + member
}

// Record appends one probe of every cluster.
func (h LagHistory) Record(rs []status.Result, at time.Time) {
	for _, r := range rs {
		if !r.Observation.EngineProbed {
			continue
		}
		for _, m := range r.Observation.Members {
			k := MemberHistoryKey(r.Observation.Cluster, m.Name)
			s := lagSample{at: at, learner: m.Engine != nil && m.Engine.IsLearner}
			if m.Lag != nil {
				l := *m.Lag
				s.lag = &l
			}
			series := append(h[k], s)
			if len(series) > HistoryLen {
				series = series[len(series)-HistoryLen:]
			}
			h[k] = series
		}
	}
}

// Lags returns the recorded lags of one member, oldest first.
func (h LagHistory) Lags(c model.ClusterFacts, member string) []*int64 {
	series := h[MemberHistoryKey(c, member)]
	out := make([]*int64, len(series))
	for i, s := range series {
		out[i] = s.lag
	}
	return out
}

// Trend says whether a member's known lag fell over its last samples.
func (h LagHistory) Trend(c model.ClusterFacts, member string) string {
	series := h[MemberHistoryKey(c, member)]
	var first, last *int64
	for _, s := range series {
		if s.lag == nil {
			continue
		}
		if first == nil {
			first = s.lag
		}
		last = s.lag
	}
	switch {
	case first == nil || last == nil || first == last:
		return ""
	case *last < *first:
		return "closing"
	case *last > *first:
		return "growing"
	}
	return "steady"
}
