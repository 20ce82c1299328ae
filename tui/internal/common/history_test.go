package common_test

import (
	"testing"
	"time"

	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

func TestHistoryRecordsProbesOnly(t *testing.T) {
	now := tuitest.Now
	h := common.LagHistory{}
	r := tuitest.Evaluate(tuitest.LearnerObs("db", "etcd-a"))
	h.Record([]status.Result{r}, now)
	unprobed := r
	unprobed.Observation.EngineProbed = false
	h.Record([]status.Result{unprobed}, now)
	c := r.Observation.Cluster
	if got := h.Lags(c, "etcd-a-2"); len(got) != 1 || got[0] == nil || *got[0] != 4000 {
		t.Errorf("history = %v", got)
	}
	r2 := tuitest.Evaluate(tuitest.HealthyObs("db", "etcd-a"))
	h.Record([]status.Result{r2}, now.Add(5*time.Second))
	if tr := h.Trend(c, "etcd-a-2"); tr != "closing" {
		t.Errorf("trend = %q, want closing", tr)
	}
	for i := 0; i < common.HistoryLen+5; i++ {
		h.Record([]status.Result{r2}, now)
	}
	if n := len(h.Lags(c, "etcd-a-0")); n != common.HistoryLen {
		t.Errorf("history keeps %d samples, want %d", n, common.HistoryLen)
	}
}
