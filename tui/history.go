package tui

import (
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// historyLen is how many probes of lag each member keeps.
const historyLen = 120

// lagSample is one probe's view of one member.
type lagSample struct {
	at      time.Time
	lag     *int64
	learner bool
}

// lagHistory keeps, per member (namespace/cluster/member), the lag of the
// last probes, for the readiness view.
type lagHistory map[string][]lagSample

func memberHistoryKey(c model.ClusterFacts, member string) string {
	return c.Namespace + "/" + c.Name + "/" + member
}

// record appends one probe of every cluster.
func (h lagHistory) record(rs []status.Result, at time.Time) {
	for _, r := range rs {
		if !r.Observation.EngineProbed {
			continue
		}
		for _, m := range r.Observation.Members {
			k := memberHistoryKey(r.Observation.Cluster, m.Name)
			s := lagSample{at: at, learner: m.Engine != nil && m.Engine.IsLearner}
			if m.Lag != nil {
				l := *m.Lag
				s.lag = &l
			}
			series := append(h[k], s)
			if len(series) > historyLen {
				series = series[len(series)-historyLen:]
			}
			h[k] = series
		}
	}
}

// lags returns the recorded lags of one member, oldest first.
func (h lagHistory) lags(c model.ClusterFacts, member string) []*int64 {
	series := h[memberHistoryKey(c, member)]
	out := make([]*int64, len(series))
	for i, s := range series {
		out[i] = s.lag
	}
	return out
}

// trend says whether a member's known lag fell over its last samples.
func (h lagHistory) trend(c model.ClusterFacts, member string) string {
	series := h[memberHistoryKey(c, member)]
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
