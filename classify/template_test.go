package classify

import (
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

func TestDescribeShowsFencesQuorumAndOverrides(t *testing.T) {
	d := judgedClassify(healthy(), replace1, now)
	text := strings.Join(Describe(d), "\n")
	for _, want := range []string{
		"replace etcd-1 in db/etcd", "shape static-existing", "flow learner",
		"quorum: 3 voters, quorum 2", "without etcd-1: 2 healthy >= 2: ok",
		"etcd member " + memberIDs[1], "cluster " + clusterID,
		"Pod db/etcd-1 uid=pod-uid-1 resourceVersion=101",
		"PersistentVolumeClaim db/data-etcd-1 uid=pvc-uid-1 resourceVersion=201",
		"1. [removing] remove member", "[catching-up] promote the learner",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("description lacks %q:\n%s", want, text)
		}
	}
	lead := judgedClassify(healthy(), model.Intent{Action: model.ActionReplace, Member: "etcd-0"}, now)
	text = strings.Join(Describe(lead), "\n")
	if !strings.Contains(text, "refused target_is_leader") || !strings.Contains(text, "(use --move-leader to override)") {
		t.Errorf("refusal does not name its override:\n%s", text)
	}
	o := healthy()
	down(&o, 2)
	text = strings.Join(Describe(judgedClassify(o, replace1, now)), "\n")
	if !strings.Contains(text, "without etcd-1: 1 healthy < 2: quorum would break") || !strings.Contains(text, "refused quorum_would_break") {
		t.Errorf("quorum refusal not explained:\n%s", text)
	}
	if !strings.Contains(text, "status member_unreachable etcd-2:") {
		t.Errorf("a refusal does not list the verdict's reasons:\n%s", text)
	}
	o = healthy()
	down(&o, 2)
	text = strings.Join(Describe(judgedClassify(o, intentFor(model.ActionReplace, "etcd-2"), now)), "\n")
	if strings.Contains(text, "status ") {
		t.Errorf("a plan that proceeds lists verdict reasons:\n%s", text)
	}
}
