package classify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// ipPeers gives every member an IP peer URL (10.0.0.<i+1>) in the member
// list, its pod that IP, while the template keeps the DNS names: members
// that advertise IPs under a template that names hosts.
func ipPeers(o *model.Observation) {
	list := peers(len(o.Members))
	for i := range list {
		list[i].PeerURLs = []string{fmt.Sprintf("http://10.0.0.%d:2380", i+1)}
	}
	setPeers(o, list)
	for i := range o.Members {
		o.Members[i].Pod.IPs = []string{fmt.Sprintf("10.0.0.%d", i+1)}
	}
}

// removedByHand drops member i from every member list; its own member
// shut down (it answers no more).
func removedByHand(o *model.Observation, i int) {
	var list []model.Peer
	for _, p := range o.Members[0].Engine.Peers {
		if p.ID != memberIDs[i] {
			list = append(list, p)
		}
	}
	setPeers(o, list)
	o.Members[i].Engine = &model.EngineFacts{Reachable: false, Err: "connection refused", ProbedAt: now}
}

// TestReplaceNeverRemovesAnotherMemberByIP: with IP peer URLs and a DNS
// template, a member removed by hand must not be mistaken for the first
// listed IP: the plan may remove no member at all (it is gone already).
func TestReplaceNeverRemovesAnotherMemberByIP(t *testing.T) {
	for _, target := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("etcd-%d", target), func(t *testing.T) {
			obs := healthy()
			ipPeers(&obs)
			if target == 0 {
				// etcd-1 leads, so removing etcd-0 is not a leader question.
				for i := range obs.Members {
					obs.Members[i].Engine.LeaderID = memberIDs[1]
				}
			}
			removedByHand(&obs, target)
			d := judgedClassify(obs, intentFor(model.ActionReplace, fmt.Sprintf("etcd-%d", target)), now)
			for _, s := range d.Steps {
				if s.Kind == model.StepRemoveMember {
					t.Fatalf("plan removes member %s although etcd-%d was removed already:\n%s", s.MemberID, target, strings.Join(Describe(d), "\n"))
				}
			}
			if d.MemberFence != nil {
				t.Errorf("member fence %+v on a member that is not listed", d.MemberFence)
			}
			if d.Verb != model.VerbProceed {
				t.Errorf("verb %s:\n%s", d.Verb, strings.Join(Describe(d), "\n"))
			}
		})
	}
}

// TestReplaceByIPUsesThePodsOwnEvidence: the same cluster with the member
// still listed: the plan removes exactly the target's member, found by
// what its own pod answered.
func TestReplaceByIPUsesThePodsOwnEvidence(t *testing.T) {
	obs := healthy()
	ipPeers(&obs)
	d := judgedClassify(obs, replace1, now)
	if d.Verb != model.VerbProceed || d.MemberFence == nil || d.MemberFence.ID != memberIDs[1] {
		t.Fatalf("verb %s, member fence %+v:\n%s", d.Verb, d.MemberFence, strings.Join(Describe(d), "\n"))
	}
	// The pod does not answer and etcd has no name for it: its pod IP is
	// still evidence.
	obs = healthy()
	ipPeers(&obs)
	list := obs.Members[0].Engine.Peers
	list[1].Name = ""
	setPeers(&obs, list)
	obs.Members[1].Engine = &model.EngineFacts{Reachable: false, Err: "timeout", ProbedAt: now}
	d = judgedClassify(obs, replace1, now)
	if d.MemberFence == nil || d.MemberFence.ID != memberIDs[1] {
		t.Fatalf("member fence %+v:\n%s", d.MemberFence, strings.Join(Describe(d), "\n"))
	}
}
