package readiness_test

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui/components/readiness"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// The tab shows each member's lag against the threshold and its history,
// the learners' catch-up under the table, and only the members the filter
// keeps.
func TestLagHistoryAndFilter(t *testing.T) {
	r := tuitest.Evaluate(tuitest.LearnerObs("db", "etcd-a"))
	h := common.LagHistory{}
	for i := range 3 {
		h.Record([]status.Result{r}, tuitest.Now.Add(time.Duration(i)*5*time.Second))
	}
	v := readiness.New(common.NewTheme(true), common.DefaultKeyMap(), tuitest.Judged(model.VerdictOptions{}), 5*time.Second, tuitest.Views)
	v.SetSize(100, 24)
	v.SetData(r, "", h)
	f := ansi.Strip(strings.Join(v.View(), "\n"))
	for _, want := range []string{"3 probes shown, every 5s", "etcd-a-0", "etcd-a-1", "etcd-a-2", "HISTORY", "joining 4000 [██████████] ███", "Learners", "etcd-a-2: 4000 entries behind"} {
		if !strings.Contains(f, want) {
			t.Errorf("the readiness tab lacks %q:\n%s", want, f)
		}
	}
	v.SetData(r, "etcd-a-2", h)
	f = ansi.Strip(strings.Join(v.View(), "\n"))
	if strings.Contains(f, "etcd-a-0 ") || !strings.Contains(f, "etcd-a-2") {
		t.Errorf("filtered to etcd-a-2, the tab shows:\n%s", f)
	}
	v, _ = v.Update(tuitest.KeyMsg("down"))
	if v.Cursor() != 0 {
		t.Errorf("down in one row: cursor %d", v.Cursor())
	}
}
