package cnpg

import (
	"fmt"
	"strconv"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// View shows CloudNativePG clusters in hactl's views: the instances'
// roles, lag in bytes of WAL against the primary's position, the
// Cluster's own word, and who streams from the primary.
type View struct{}

var (
	_ model.EngineView = View{}
	_ model.TableView  = View{}
)

// View implements engine.Viewed.
func (Engine) View() model.EngineView { return View{} }

func facts(m model.Member) *model.CNPGFacts {
	if e := m.Engine; e != nil && e.Reachable {
		return e.CNPG
	}
	return nil
}

// Role is the instance's role: primary, replica, or down.
func (View) Role(m model.Member) string {
	if f := facts(m); f != nil {
		return f.RoleName()
	}
	return m.Engine.Role().String()
}

// Leads: m answers as the running primary.
func (View) Leads(m model.Member) bool { return facts(m).Writable() }

func (View) LagText(l *int64) string  { return format.WALLag(l) }
func (View) LagUnit() string          { return "bytes of WAL" }
func (View) Position(p uint64) string { return format.LSN(p) }

func (View) Frontier(f uint64, leader string) string {
	return fmt.Sprintf("frontier: WAL position %s of primary %s", format.LSN(f), format.Dash(leader))
}

// Columns: the timeline.
func (View) Columns() []model.ViewColumn { return []model.ViewColumn{{Title: "TL", Max: 5, Drop: 7}} }

func (View) Cells(m model.Member) []string { return []string{timeline(facts(m))} }

func timeline(f *model.CNPGFacts) string {
	if f == nil || f.TimelineID <= 0 {
		return "-"
	}
	return strconv.FormatInt(f.TimelineID, 10)
}

// Candidate: an instance that does not answer as the primary.
func (View) Candidate(m model.Member) bool {
	f := facts(m)
	return m.Name != "" && f != nil && !f.IsPrimary && f.Down == ""
}

// Summary is the Cluster's phase and its recorded primary, and who
// answered.
func (View) Summary(obs model.Observation, v model.Votes) []string {
	var q []string
	switch op := obs.Cluster.Operator; {
	case op == nil || op.Err != "":
		q = append(q, "Cluster not read")
	default:
		q = append(q, "phase "+format.Dash(op.Status), "primary "+format.Dash(op.Primary))
		if op.TargetPrimary != "" && op.TargetPrimary != op.Primary {
			q = append(q, "switching to "+op.TargetPrimary)
		}
	}
	return append(q, fmt.Sprintf("answering %d/%d", v.Answering, v.Voters))
}

// Section is the replication: whether the primary lists each replica as
// streaming, with what it replayed.
func (View) Section(obs model.Observation, _ uint64, _ func(string) string) (string, []string, string) {
	var primary *model.CNPGFacts
	for _, m := range obs.Members {
		if f := facts(m); f.Writable() {
			primary = f
		}
	}
	if primary == nil {
		return "Replication", []string{"no primary answered: replication unknown"}, ""
	}
	var out []string
	for _, m := range obs.Members {
		if facts(m).Writable() {
			continue
		}
		if rep, ok := primary.Streaming(m.Name); ok {
			out = append(out, fmt.Sprintf("%s: streaming from the primary (%s)", m.Name, format.Dash(rep.SyncState)))
		} else {
			out = append(out, m.Name+": not streaming from the primary")
		}
	}
	if len(out) == 0 {
		out = append(out, "no replicas")
	}
	return "Replication", out, ""
}

// TableColumns: the role and timeline; with -o wide the system
// identifier and the WAL positions (current, received, replayed).
func (View) TableColumns() (narrow, wide []string) {
	return []string{"ROLE", "TL"}, []string{"SYSTEM ID", "WAL", "RECEIVED", "REPLAYED"}
}

// TableCells are m's cells under TableColumns.
func (v View) TableCells(m model.Member) (narrow, wide []string) {
	f := facts(m)
	if f == nil {
		f = &model.CNPGFacts{}
	}
	pos := func(l *int64) string {
		if l == nil {
			return "-"
		}
		return format.LSN(uint64(*l))
	}
	return []string{v.Role(m), timeline(f)}, []string{format.Dash(f.SystemID), pos(f.CurrentLSN), pos(f.ReceivedLSN), pos(f.ReplayLSN)}
}
