package patroni

import (
	"slices"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// Status's table shows a Patroni member in Patroni's words: its role as
// Patroni names it, the state and timeline PostgreSQL reported, and with
// -o wide the system identifier and WAL positions; a member that did not
// answer gets dashes, never another member's facts or zeros.
func TestTableCellsInPatronisWords(t *testing.T) {
	received, replayed := int64(50331648), int64(50331000)
	replica := model.Member{Name: "pg-1", Engine: &model.EngineFacts{Reachable: true, ClusterID: "7312345678901234567",
		Patroni: &model.PatroniFacts{Role: "replica", State: "streaming", Timeline: 3, ReceivedLocation: &received, ReplayedLocation: &replayed}}}
	narrow, wide := View{}.TableCells(replica)
	if want := []string{"replica", "streaming", "3"}; !slices.Equal(narrow, want) {
		t.Errorf("narrow cells %q, want %q", narrow, want)
	}
	if want := []string{"7312345678901234567", "-", "50331648", "50331000"}; !slices.Equal(wide, want) {
		t.Errorf("wide cells %q, want %q", wide, want)
	}
	cols, wideCols := View{}.TableColumns()
	if len(cols) != len(narrow) || len(wideCols) != len(wide) {
		t.Errorf("columns %q %q do not match cells %q %q", cols, wideCols, narrow, wide)
	}
	down := model.Member{Name: "pg-2", Engine: &model.EngineFacts{Err: "connection refused"}}
	narrow, wide = View{}.TableCells(down)
	if narrow[1] != "-" || narrow[2] != "-" || !slices.Equal(wide, []string{"-", "-", "-", "-"}) {
		t.Errorf("an unanswered member's cells %q %q, want dashes", narrow, wide)
	}
	if narrow, _ = (View{}).TableCells(model.Member{Name: "pg-3"}); narrow[0] != model.RoleUnknown.String() {
		t.Errorf("an unprobed member's role %q", narrow[0])
	}
}
