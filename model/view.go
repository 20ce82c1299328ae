package model

// EngineView is how one engine's facts read in hactl's views: its
// members' roles, its unit of lag and positions, the cluster's summary
// line, and a section of its own below the readiness table. An engine
// keeps its view in its own package and the faces hand it to the views,
// which name no engine.
type EngineView interface {
	// Role is m's role as the engine names it.
	Role(m Member) string
	// Leads reports whether m is the member writes go to.
	Leads(m Member) bool
	// LagText prints a lag in the engine's unit ("?" when unknown), and
	// LagUnit names the unit.
	LagText(l *int64) string
	LagUnit() string
	// Frontier is the readiness view's head when the leader's frontier f
	// is known.
	Frontier(f uint64, leader string) string
	// Position prints a position in the engine's terms (a raft index, a
	// PostgreSQL LSN).
	Position(p uint64) string
	// Summary is the cluster-wide part of the cluster view's second
	// summary line (the frontier follows it).
	Summary(obs Observation, v Votes) []string
	// Section is the readiness view's section below its table: a title,
	// its lines (wrapped by the view) and what it says, dimmed, when it
	// has none; thr is the lag threshold and trend a member's recent
	// lags. No title: no section.
	Section(obs Observation, thr uint64, trend func(member string) string) (title string, lines []string, none string)
	// Candidate reports whether m, selected, may be named as a
	// switchover's candidate (else the classifier chooses).
	Candidate(m Member) bool
	// Columns are the engine's own member-table columns (after PHASE),
	// and Cells one member's, as many.
	Columns() []ViewColumn
	Cells(m Member) []string
}

// ViewColumn is a member-table column an engine adds.
type ViewColumn struct {
	Title string
	// Min and Max bound the width (Max 0: no bound); Drop is the order in
	// which columns give way when the table is too wide (higher first,
	// 0 never).
	Min, Max, Drop int
}

// Votes are the cluster-wide counts the verdict derived: how many members
// count, how many must remain, how many the cluster can lose and how many
// answered.
type Votes struct {
	Voters, Quorum, Tolerance, Answering int
}

// TableView is an engine's part of status's member table, which an
// EngineView may offer: its columns between NODE and PHASE, and with
// -o wide those between PVC and PROBE, with one member's cells for each
// (as many). The lag column reads in the view's LagText.
type TableView interface {
	TableColumns() (narrow, wide []string)
	TableCells(m Member) (narrow, wide []string)
}
