package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
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
		head += "  leader " + cs.Leader
	}
	if o.Wide && cs.ClusterID != "" {
		head += "  cluster " + cs.ClusterID
	}
	if !cs.EngineProbed {
		head += "  (members not probed)"
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}

	tw := printers.GetNewTabWriter(w)
	cols := []string{"ORD", "POD", "NODE", "ROLE", "MEMBER ID", "PHASE", "READY", "LAG", "VERSION", "RESTARTS", "AGE", "REASONS"}
	if o.Wide {
		cols = append(cols, "PVC", "CLUSTER ID", "TERM", "INDEX", "APPLIED", "DB SIZE", "PROBE")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, m := range cs.Members {
		row := []string{
			strconv.Itoa(m.Ordinal), dash(m.Pod), dash(m.Node), m.Role, dash(m.MemberID), m.Phase,
			strconv.FormatBool(m.Ready), lagText(m.Lag), dash(m.Version), strconv.Itoa(m.Restarts),
			age(m.CreatedAt, o.Now), dash(strings.Join(m.Reasons, ",")),
		}
		if o.Wide {
			pvc := "-"
			if m.PVC != "" {
				pvc = m.PVC + "(" + m.PVCPhase + ")"
			}
			probe := "-"
			if m.Reachable != nil {
				probe = "ok"
				if !*m.Reachable {
					probe = m.ProbeError
				}
			}
			row = append(row, pvc, dash(m.ClusterID), num(m.RaftTerm), num(m.RaftIndex), num(m.RaftAppliedIndex),
				bytesText(m.DBSize), probe)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range cs.Actions {
		line := fmt.Sprintf("  action %s %s: %s, phase %s", a.Action, a.Member+a.Generation, a.State, a.Phase)
		if !a.UpdatedAt.IsZero() {
			line += ", updated " + duration.HumanDuration(o.Now.Sub(a.UpdatedAt)) + " ago"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	for _, r := range cs.Verdict.Reasons {
		code := r.Code
		c := ansiYellow
		if r.Impact == "control" {
			c = ansiRed
		}
		line := "  " + paint(c, code)
		if r.Member != "" {
			line += " " + r.Member
		}
		if r.Detail != "" {
			line += ": " + r.Detail
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(n uint64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatUint(n, 10)
}

func lagText(l *int64) string {
	if l == nil {
		return "?"
	}
	return strconv.FormatInt(*l, 10)
}

func age(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(*t))
}

func bytesText(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1<<20:
		return fmt.Sprintf("%.0fKiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2fGiB", float64(n)/(1<<30))
}
