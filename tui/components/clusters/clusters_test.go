package clusters_test

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/clusters"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

func TestClusterListFilters(t *testing.T) {
	rs := []status.Result{tuitest.Evaluate(tuitest.HealthyObs("db", "etcd-a")), tuitest.Evaluate(tuitest.DegradedObs("db", "etcd-b"))}
	c := clusters.New(common.NewTheme(true), common.DefaultKeyMap(), "db")
	c.SetSize(80, 20)
	c.SetData(rs, "")
	c, _ = c.Update(tuitest.KeyMsg("down"))
	if r, ok := c.Selected(); !ok || r.Observation.Cluster.Name != "etcd-b" {
		t.Fatalf("down selects %v", r.Observation.Cluster.Name)
	}
	c.SetData(rs, "not_ready")
	c.Clamp()
	if len(c.Visible()) != 1 {
		t.Fatalf("the filter keeps %d clusters, want 1", len(c.Visible()))
	}
	if r, ok := c.Selected(); !ok || r.Observation.Cluster.Name != "etcd-b" {
		t.Errorf("filtered, the selection is %q", r.Observation.Cluster.Name)
	}
	f := ansi.Strip(strings.Join(c.View(), "\n"))
	if strings.Contains(f, "etcd-a") || !strings.Contains(f, "pod_not_ready") {
		t.Errorf("filtered view:\n%s", f)
	}
	c.SetData(rs, "zookeeper")
	if _, ok := c.Selected(); ok || !strings.Contains(strings.Join(c.View(), "\n"), "no cluster matches the filter") {
		t.Error("a filter that matches nothing is not said")
	}
}
