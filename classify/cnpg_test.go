package classify

import (
	"slices"
	"strings"
	"testing"

	cnpgengine "github.com/hactl-dev/hactl/engine/cnpg"
	"github.com/hactl-dev/hactl/model"
)

// A CloudNativePG cluster's every action is refused, naming the
// operator's own way filled in for the cluster and instance, and plans
// nothing: its operator owns the instances.
func TestCNPGActionsNameTheOperatorsWay(t *testing.T) {
	obs := healthy()
	obs.Cluster.Engine, obs.Cluster.Name, obs.Cluster.Layout = cnpgengine.Name, "ex", "CloudNativePG instances"
	for i := range obs.Members {
		obs.Members[i].Name = []string{"ex-1", "ex-2", "ex-3"}[i]
		obs.Members[i].Engine = &model.EngineFacts{Reachable: true, MemberID: obs.Members[i].Name, CNPG: &model.CNPGFacts{}}
	}
	for _, c := range []struct {
		action model.Action
		member string
		code   model.Code
		says   string
	}{
		{model.ActionReplace, "ex-2", model.CodeShapeOperatorOwned, "kubectl cnpg destroy ex ex-2 -n db"},
		{model.ActionReseed, "ex-2", model.CodeShapeOperatorOwned, "kubectl cnpg destroy ex ex-2 -n db"},
		{model.ActionSwitchover, "ex-3", model.CodeActionUnsupported, "kubectl cnpg promote ex ex-3 -n db"},
		{model.ActionSeed, "", model.CodeActionUnsupported, "kubectl cnpg backup ex"},
		{model.ActionReplace, "ex-9", model.CodeMemberNotFound, "no instance"},
	} {
		in := model.Intent{Action: c.action, Member: c.member}
		d := judgedClassify(obs, in, now)
		if d.Verb != model.VerbRefuse || !slices.Contains(blockerCodes(d), c.code) || len(d.Steps) > 0 || d.Deletes() {
			t.Errorf("%s %s: verb %s, blockers %v, steps %v", c.action, c.member, d.Verb, blockerCodes(d), kinds(d))
			continue
		}
		if !slices.ContainsFunc(d.Blockers, func(b model.Blocker) bool { return strings.Contains(b.Detail, c.says) }) {
			t.Errorf("%s %s: no blocker says %q: %+v", c.action, c.member, c.says, d.Blockers)
		}
	}
}
