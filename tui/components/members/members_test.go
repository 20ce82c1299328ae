package members

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/remedy"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

func TestMemberViewSizeAndPane(t *testing.T) {
	v := New(common.NewTheme(true), common.DefaultKeyMap(), remedy.Load(), tuitest.Clock, tuitest.Views)
	v.SetSize(120, 20)
	v.SetData(tuitest.Evaluate(tuitest.DegradedObs("db", "etcd-b")), "")
	id := tuitest.MemberID(1)
	if f := ansi.Strip(strings.Join(v.View(), "\n")); !strings.Contains(f, id) {
		t.Fatalf("at 120 cells the member ID %s is not whole:\n%s", id, f)
	}
	v.SetSize(80, 20)
	f := ansi.Strip(strings.Join(v.View(), "\n"))
	if strings.Contains(f, id) || !strings.Contains(f, id[:8]) {
		t.Errorf("at 80 cells the member ID is not shortened to %s:\n%s", id[:8], f)
	}
	if n := len(v.View()); n < 20 {
		t.Fatalf("the tab draws %d lines in 20: the pane does not fill it", n)
	}
	v, _ = v.Update(tuitest.KeyMsg("pgdown"))
	if v.lower != 5 || !strings.Contains(ansi.Strip(strings.Join(v.View(), "\n")), "[lines 6–") {
		t.Errorf("pgdown: pane at %d", v.lower)
	}
	for range 50 {
		v, _ = v.Update(tuitest.KeyMsg("pgdown"))
	}
	if last := len(v.pane()) - 1; v.lower != last {
		t.Errorf("the pane scrolled to %d, past its last line %d", v.lower, last)
	}
	v, _ = v.Update(tuitest.KeyMsg("down"))
	if v.Cursor() != 1 {
		t.Errorf("down: cursor %d", v.Cursor())
	}
}
