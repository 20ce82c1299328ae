package classify

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// Describe renders a decision as the lines a confirm dialog shows: what
// will be done to which member, the quorum arithmetic, every fence, the
// plan step by step, notes, and blockers with the flag that overrides each.
// The CLI and the TUI print exactly these lines.
func Describe(d model.Decision) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	what := d.Intent.Action.String()
	if d.Intent.Member != "" {
		what += " " + d.Intent.Member
	}
	add("%s in %s/%s (%s, shape %s, flow %s): %s", what, d.Cluster.Namespace, d.Cluster.Name, d.Cluster.Engine, d.Shape, d.Flow, verbText(d))
	if d.Leader != "" {
		add("leader: %s", d.Leader)
	}
	q := d.Quorum
	if q.Voters > 0 {
		line := fmt.Sprintf("quorum: %d voters, quorum %d; healthy voters: %s", q.Voters, q.Quorum, listOr(q.HealthyVoters, "none"))
		switch {
		case q.Checked && q.OK:
			line += fmt.Sprintf("; without %s: %d healthy >= %d: ok", d.Intent.Member, q.HealthyWithout, q.Quorum)
		case q.Checked:
			line += fmt.Sprintf("; without %s: %d healthy < %d: quorum would break", d.Intent.Member, q.HealthyWithout, q.Quorum)
		case !q.TargetVotes && d.Intent.Member != "" && d.Flow != model.FlowSeed:
			line += fmt.Sprintf("; %s is not a voter now: removing it does not change quorum", d.Intent.Member)
		}
		add("%s", line)
	}
	if mf := d.MemberFence; mf != nil || len(d.Fences) > 0 {
		add("fences (what was observed; a change stops the action):")
		if mf != nil {
			kind := "voter"
			if mf.IsLearner {
				kind = "learner"
			}
			add("  etcd member %s (%s %s, peer %s) of cluster %s", mf.ID, kind, cmp.Or(mf.Name, "unnamed"), strings.Join(mf.PeerURLs, ","), mf.ClusterID)
		}
		for _, f := range d.Fences {
			add("  %s %s/%s uid=%s resourceVersion=%s", f.Kind, f.Namespace, f.Name, f.UID, f.ResourceVersion)
		}
	}
	if len(d.Steps) > 0 {
		add("plan:")
		for i, s := range d.Steps {
			add("  %d. [%s] %s", i+1, s.Phase, s.Detail)
		}
	}
	// Why a refusal, await or observe: the verdict's reasons (a plan that
	// proceeds speaks for itself).
	var why []model.Reason
	if d.Verb != model.VerbProceed && d.Verb != model.VerbDone {
		why = d.Verdict
	}
	for i, r := range why {
		if i == maxVerdictLines {
			add("status: %d more reasons (kubectl hactl status)", len(why)-i)
			break
		}
		who := ""
		if r.Member != "" {
			who = " " + r.Member
		}
		add("status %s%s: %s", r.Code, who, r.Detail)
	}
	for _, n := range d.Notes {
		add("note %s: %s", n.Code, n.Detail)
	}
	for _, b := range d.Blockers {
		line := fmt.Sprintf("%s %s: %s", blockWord(d), b.Code, b.Detail)
		if b.Override != "" {
			line += fmt.Sprintf(" (use %s to override)", b.Override)
		}
		add("%s", line)
	}
	if len(d.Runbook) > 0 {
		add("instead, by hand:")
		for i, s := range d.Runbook {
			add("  %d. %s", i+1, s)
		}
	}
	return out
}

// maxVerdictLines bounds the verdict reasons a description lists.
const maxVerdictLines = 8

func verbText(d model.Decision) string {
	switch d.Verb {
	case model.VerbProceed:
		return fmt.Sprintf("will proceed (phase %s, %d steps)", d.Phase, len(d.Steps))
	case model.VerbAwait:
		return "await: a deletion is in flight"
	case model.VerbObserve:
		return "observe only: nothing will be deleted"
	case model.VerbDone:
		return "done: nothing left to do"
	case model.VerbRefuse:
		return "REFUSED"
	}
	return d.Verb.String()
}

func blockWord(d model.Decision) string {
	switch d.Verb {
	case model.VerbAwait:
		return "await"
	case model.VerbObserve:
		return "observe"
	}
	return "refused"
}

func listOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return strings.Join(s, ", ")
}
