package cnpg

import "github.com/hactl-dev/hactl/model"

// Rules plan actions on CloudNativePG clusters (model.ClassifyRules).
// The operator owns every instance's pod and volumes and carries out
// every change itself; hactl refuses each action and names the
// operator's own way, filled in for the cluster and member.
var _ model.ClassifyRules = Rules{}

func (Rules) refuse(p model.Plan, code model.Code, format string, args ...any) {
	p.Block(code, p.Intent().Member, "", format, args...)
}

func clusterOf(p model.Plan) (ns, name string) {
	c := p.Observation().Cluster
	return c.Namespace, c.Name
}

// PlanReplace refuses: the operator rebuilds an instance when it is
// destroyed (kubectl cnpg destroy), creating a new one from the primary.
func (r Rules) PlanReplace(p model.Plan) {
	ns, name := clusterOf(p)
	m := p.Intent().Member
	if p.Member(m) == nil {
		r.refuse(p, model.CodeMemberNotFound, "%s/%s has no instance %q (instances: %s)", ns, name, m, p.MemberNames())
		return
	}
	r.refuse(p, model.CodeShapeOperatorOwned, "CloudNativePG's operator owns %s's pod and volumes: rebuild it its way, `kubectl cnpg destroy %s %s -n %s` (the operator then creates a new instance, cloned from the primary); hactl deletes nothing of it",
		m, name, m, ns)
}

// PlanSeed refuses: seed generations of CloudNativePG clusters are not
// supported.
func (r Rules) PlanSeed(p model.Plan) {
	r.refuse(p, model.CodeActionUnsupported, "seed generations of CloudNativePG clusters are not supported; CloudNativePG's own backups are `kubectl cnpg backup %s`", p.Observation().Cluster.Name)
}

// PlanRestore refuses: CloudNativePG restores into a new Cluster.
func (r Rules) PlanRestore(p model.Plan) {
	r.refuse(p, model.CodeActionUnsupported, "CloudNativePG restores a backup into a new Cluster (spec.bootstrap.recovery), not over %s: hactl does not restore it", p.Observation().Cluster.Name)
}

// PlanSwitchover refuses, naming the operator's way (the Cluster's
// targetPrimary, which `kubectl cnpg promote` sets).
func (r Rules) PlanSwitchover(p model.Plan) {
	ns, name := clusterOf(p)
	to := p.Intent().Member
	if to == "" {
		to = "INSTANCE"
	}
	r.refuse(p, model.CodeActionUnsupported, "CloudNativePG's operator switches over when its Cluster's status.targetPrimary is set, as `kubectl cnpg promote %s %s -n %s` does; hactl does not set it yet", name, to, ns)
}

// HoldsRecorded implements model.ClassifyRules: no action is ever
// recorded.
func (Rules) HoldsRecorded(model.Plan, *model.LedgerEntry) bool { return false }

// StaleWait implements model.ClassifyRules: no action waits.
func (Rules) StaleWait(model.Plan, *model.LedgerEntry, bool) string { return "" }

// ReadyMeaning implements model.ClassifyRules.
func (Rules) ReadyMeaning(model.Decision) string {
	return "the instance answers its instance manager's status, streaming from the primary"
}
