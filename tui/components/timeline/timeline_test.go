package timeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/tui/components/timeline"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// The rows come newest first, and the selected row's whole detail shows
// under the table.
func TestNewestFirstWithTheSelectedDetail(t *testing.T) {
	o := tuitest.HealthyObs("db", "etcd-a")
	o.Events = []model.EventFacts{
		{Type: "Normal", Reason: "Killing", Object: "Pod/etcd-a-2", Message: "Stopping container etcd", Count: 1, Last: tuitest.Now.Add(-10 * time.Minute)},
		{Type: "Normal", Reason: "Started", Object: "Pod/etcd-a-2", Message: "Started container etcd", Count: 1, Last: tuitest.Now.Add(-5 * time.Minute)},
	}
	v := timeline.New(common.NewTheme(true), common.DefaultKeyMap())
	v.SetSize(120, 20)
	v.SetData(tuitest.Evaluate(o), nil)
	d := v.Details()
	started, stopping := index(d, "Started container etcd"), index(d, "Stopping container etcd")
	if started < 0 || stopping < 0 || started > stopping {
		t.Fatalf("details are not newest first: %q", d)
	}
	for range started {
		v, _ = v.Update(tuitest.KeyMsg("down"))
	}
	f := ansi.Strip(strings.Join(v.View(), "\n"))
	if !strings.Contains(f, "  "+d[started]) {
		t.Errorf("the selected row's detail %q is not shown:\n%s", d[started], f)
	}
	v, _ = v.Update(tuitest.KeyMsg("down"))
	if f := ansi.Strip(strings.Join(v.View(), "\n")); !strings.Contains(f, "  "+d[v.Cursor()]) {
		t.Errorf("after down, the detail %q is not shown:\n%s", d[v.Cursor()], f)
	}
}

func index(details []string, s string) int {
	for i, d := range details {
		if strings.Contains(d, s) {
			return i
		}
	}
	return -1
}
