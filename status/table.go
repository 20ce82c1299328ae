package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// TableOptions tune the human table.
type TableOptions struct {
	Wide bool
	// Color enables ANSI colours for the verdict.
	Color bool
	// ShowNamespace prefixes cluster names with their namespace (-A).
	ShowNamespace bool
	// Now is used for ages.
	Now time.Time
	// NoHeaders leaves out the member tables' column headers.
	NoHeaders bool
}

const (
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// PrintTable writes the human view of every cluster: a summary line with
// the verdict, one row per member, then the reasons.
func PrintTable(w io.Writer, list []*ClusterStatus, o TableOptions) error {
	if len(list) == 0 {
		return nil
	}
	for i, cs := range list {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := printCluster(w, cs, o); err != nil {
			return err
		}
	}
	return nil
}

func printCluster(w io.Writer, cs *ClusterStatus, o TableOptions) error {
	paint := func(code, s string) string {
		if !o.Color {
			return s
		}
		return code + s + ansiReset
	}
	if _, err := fmt.Fprintln(w, clusterHead(cs, o, paint)); err != nil {
		return err
	}
	tw := printers.GetNewTabWriter(w)
	if !o.NoHeaders {
		fmt.Fprintln(tw, strings.Join(columns(cs.table, o), "\t"))
	}
	for i, m := range cs.Members {
		// What members say reaches a terminal as text, never as
		// control sequences (kubectl's rule for printed objects).
		cells := row(cs.table, i, m, o)
		for i, c := range cells {
			cells[i] = printers.EscapeTerminal(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range clusterFooter(cs, o, paint) {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// clusterHead is the line above a cluster's members: name, engine and
// shape, ready members, the verdict, the leader.
func clusterHead(cs *ClusterStatus, o TableOptions, paint func(code, s string) string) string {
	name := cs.Metadata.Name
	if o.ShowNamespace {
		name = cs.Metadata.Namespace + "/" + name
	}
	verdict := "failover-ready"
	color := ansiGreen
	switch {
	case !cs.Verdict.ControlReady:
		verdict, color = "NOT control-ready", ansiRed
	case !cs.Verdict.FailoverReady:
		verdict, color = "control-ready, NOT failover-ready", ansiYellow
	}
	head := fmt.Sprintf("%s  %s/%s  %d/%d ready  %s", paint(ansiBold, name), cs.Engine, cs.Shape,
		cs.ReadyMembers, cs.Replicas, paint(color, verdict))
	if cs.Leader != "" {
		head += "  leader " + printers.EscapeTerminal(cs.Leader)
	}
	if cs.ManagedBy != "" {
		head += "  (" + cs.Layout + ", owned by " + cs.ManagedBy + ")"
	}
	if o.Wide && cs.ClusterID != "" {
		head += "  cluster " + printers.EscapeTerminal(cs.ClusterID)
	}
	if !cs.EngineProbed {
		head += "  (members not probed)"
	}
	return head
}

// clusterFooter lists the actions in progress and the verdict's reasons.
func clusterFooter(cs *ClusterStatus, o TableOptions, paint func(code, s string) string) []string {
	var out []string
	for _, a := range cs.Actions {
		line := fmt.Sprintf("  action %s %s: %s, phase %s", a.Action, a.Member+a.Generation, a.State, a.Phase)
		if !a.UpdatedAt.IsZero() {
			line += ", updated " + format.Age(a.UpdatedAt, o.Now) + " ago"
		}
		out = append(out, line)
	}
	for _, n := range cs.Notes {
		out = append(out, "  "+printers.EscapeTerminal(n))
	}
	if op := cs.Operator; op != nil {
		out = append(out, "  "+OperatorLine(op))
		if b := BackupLine(op, o.Now); b != "" {
			out = append(out, "  "+b)
		}
	}
	for _, r := range cs.Verdict.Reasons {
		c := ansiYellow
		if r.Impact == "control" {
			c = ansiRed
		}
		line := "  " + paint(c, r.Code)
		if r.Member != "" {
			line += " " + printers.EscapeTerminal(r.Member)
		}
		if r.Detail != "" {
			line += ": " + printers.EscapeTerminal(r.Detail)
		}
		out = append(out, line)
	}
	return out
}

// OperatorLine is what an operator's resource says of the cluster, in
// one line (the table's, the live view's), with any terminal control in
// the resource's words escaped.
func OperatorLine(op *model.OperatorFacts) string {
	if op.Err != "" {
		return printers.EscapeTerminal(op.Kind + " " + op.Name + " not read: " + op.Err)
	}
	line := op.Kind + " " + op.Name + " says: "
	if op.Status != "" && op.Primary == "" {
		// One status word, no conditions and no member count (Zalando's).
		return printers.EscapeTerminal(line + op.Status)
	}
	if op.Status != "" {
		// A phase and the primary it records (CloudNativePG's).
		line += op.Status + ", primary " + op.Primary
		if op.TargetPrimary != "" && op.TargetPrimary != op.Primary {
			line += " (switching to " + op.TargetPrimary + ")"
		}
		if op.Available != nil && !*op.Available {
			line += ", not " + op.Condition()
		}
		return printers.EscapeTerminal(line + fmt.Sprintf(", %d instances ready", op.ReadyMembers))
	}
	switch {
	case op.Available == nil:
		line += "no " + op.Condition() + " condition"
	case *op.Available:
		line += op.Condition()
	default:
		line += "not " + op.Condition()
	}
	if op.AvailableReason != "" {
		line += " (" + op.AvailableReason + ")"
	}
	line += fmt.Sprintf(", %d members ready", op.ReadyMembers)
	if op.ClusterID != "" {
		line += ", cluster " + op.ClusterID
	}
	return printers.EscapeTerminal(line)
}

// BackupLine is what an operator's record of its own backups says
// (etcd-druid's snapshot Leases), in one line with ages as of now; ""
// where it keeps none.
func BackupLine(op *model.OperatorFacts, now time.Time) string {
	b := op.Backup
	if b == nil || op.Err != "" {
		return ""
	}
	line := "its backups: "
	switch {
	case b.Ready == nil:
		line += "no BackupReady condition"
	case *b.Ready:
		line += "BackupReady"
	default:
		line += "not BackupReady"
	}
	if b.ReadyReason != "" {
		line += " (" + b.ReadyReason + ")"
	}
	if b.Err != "" {
		return printers.EscapeTerminal(line + "; snapshot Leases not read: " + b.Err)
	}
	snap := func(kind string, rev int64, at *time.Time) string {
		if at == nil {
			return "no " + kind + " snapshot recorded"
		}
		return fmt.Sprintf("%s snapshot at revision %d, %s ago", kind, rev, format.Age(*at, now))
	}
	line += "; " + snap("full", b.FullRevision, b.FullAt) + "; " + snap("delta", b.DeltaRevision, b.DeltaAt)
	return printers.EscapeTerminal(line)
}

// columns are the member table's headers: hactl's own, with the
// engine's (t) between NODE and PHASE, LAG after READY, and with -o wide
// the engine's between PVC and PROBE.
func columns(t *memberTable, o TableOptions) []string {
	if t == nil {
		t = &memberTable{}
	}
	cols := append(append([]string{"ORD", "POD", "NODE"}, t.narrow...), "PHASE", "READY")
	if t.lag {
		cols = append(cols, "LAG")
	}
	cols = append(cols, "VERSION", "RESTARTS", "AGE", "REASONS")
	if o.Wide {
		cols = append(append(append(cols, "PVC"), t.wide...), "PROBE")
	}
	return cols
}

// row is member i's cells (m) under columns.
func row(t *memberTable, i int, m MemberStatus, o TableOptions) []string {
	var c memberCells
	if t != nil && i < len(t.rows) {
		c = t.rows[i]
	}
	cells := append(append([]string{strconv.Itoa(m.Ordinal), format.Dash(m.Pod), format.Dash(m.Node)}, c.narrow...), m.Phase, strconv.FormatBool(m.Ready))
	if t != nil && t.lag {
		cells = append(cells, c.lag)
	}
	cells = append(cells, format.Dash(m.Version), strconv.Itoa(m.Restarts), format.Age(ptrTime(m.CreatedAt), o.Now), format.Dash(strings.Join(m.Reasons, ",")))
	if o.Wide {
		cells = append(append(append(cells, pvcCell(m)), c.wide...), probeCell(m))
	}
	return cells
}

func pvcCell(m MemberStatus) string {
	if m.PVC == "" {
		return "-"
	}
	return m.PVC + "(" + m.PVCPhase + ")"
}

func probeCell(m MemberStatus) string {
	switch {
	case m.Reachable == nil:
		return "-"
	case !*m.Reachable:
		return m.ProbeError
	}
	return "ok"
}

// ptrTime is *t, the zero time for nil.
func ptrTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
