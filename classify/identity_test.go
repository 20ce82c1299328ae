package classify

import (
	"fmt"
	"net"
	"net/url"
	"slices"
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

func TestPeerURLMatches(t *testing.T) {
	ev0 := Evidence{Name: "etcd-0", PodIPs: []string{"127.3.1.1"}}
	cases := []struct {
		tmpl, list string
		listed     model.Peer
		ev         Evidence
		want       bool
	}{
		{"http://etcd-0.h.ns.svc:2380", "http://etcd-0.h.ns.svc:2380", model.Peer{}, Evidence{Name: "etcd-0"}, true},
		{"http://ETCD-0.h.ns.svc:2380", "http://etcd-0.h.ns.svc:2380", model.Peer{}, Evidence{Name: "etcd-0"}, true},
		{"http://etcd-0.h.ns.svc:2380", "http://127.3.1.1:2380", model.Peer{ID: "a"}, ev0, true},
		{"http://etcd-0.h.ns.svc:2380", "http://127.3.1.1:2380", model.Peer{ID: "a", Name: "etcd-0"}, Evidence{Name: "etcd-0"}, true},
		{"http://etcd-0.h.ns.svc:2380", "http://127.3.1.1:2380", model.Peer{ID: "a"}, Evidence{Name: "etcd-0", MemberIDs: []string{"a"}}, true},
		// No evidence: a name prefix never identifies an IP.
		{"http://etcd-0.h.ns.svc:2380", "http://127.3.1.1:2380", model.Peer{ID: "a"}, Evidence{Name: "etcd-0"}, false},
		{"http://etcd-0.h.ns.svc:2380", "http://127.3.1.2:2380", model.Peer{ID: "b", Name: "etcd-1"}, ev0, false},
		{"http://etcd-0.h.ns.svc:2380", "http://127.3.1.1:2381", model.Peer{ID: "a", Name: "etcd-0"}, ev0, false},
		{"http://etcd-0.h.ns.svc:2380", "https://127.3.1.1:2380", model.Peer{ID: "a", Name: "etcd-0"}, ev0, false},
		{"http://etcd-1.h.ns.svc:2380", "http://127.3.1.1:2380", model.Peer{ID: "a", Name: "etcd-0"}, ev0, false},
		{"http://etcd-0.h.ns.svc:2380", "http://etcd-0.other.ns.svc:2380", model.Peer{}, ev0, false},
		{"http://10.0.0.1:2380", "http://10.0.0.2:2380", model.Peer{}, Evidence{Name: "etcd-0", PodIPs: []string{"10.0.0.2"}}, false},
		{"::", "http://a:2380", model.Peer{}, Evidence{Name: "a"}, false},
	}
	for _, c := range cases {
		if got := PeerURLMatches(c.tmpl, c.list, c.listed, c.ev); got != c.want {
			t.Errorf("PeerURLMatches(%q, %q, %+v, %+v) = %v, want %v", c.tmpl, c.list, c.listed, c.ev, got, c.want)
		}
	}
}

// FuzzPeerURLMatches: whatever the input, an IP in the member list
// matches a different host in the template only on evidence of that
// member (its name in the list, its member ID, its pod IP), and only for
// the template's own host name.
func FuzzPeerURLMatches(f *testing.F) {
	f.Add("http://etcd-0.h.ns.svc:2380", "http://127.3.1.1:2380", "a", "", "etcd-0", "127.3.1.1", "")
	f.Add("http://etcd-1.h:2380", "http://10.0.0.1:2380", "b", "etcd-1", "etcd-1", "", "b")
	f.Add("https://x:1", "https://X:1", "", "", "x", "", "")
	f.Fuzz(func(t *testing.T, tmpl, list, id, listedName, name, podIP, evID string) {
		listed := model.Peer{ID: id, Name: listedName, PeerURLs: []string{list}}
		ev := Evidence{Name: name}
		if podIP != "" {
			ev.PodIPs = []string{podIP}
		}
		if evID != "" {
			ev.MemberIDs = []string{evID}
		}
		if !PeerURLMatches(tmpl, list, listed, ev) || tmpl == list {
			return
		}
		tu, err1 := url.Parse(tmpl)
		lu, err2 := url.Parse(list)
		if err1 != nil || err2 != nil {
			t.Fatalf("unparsable URLs matched: %q %q", tmpl, list)
		}
		if tu.Scheme != lu.Scheme || tu.Port() != lu.Port() {
			t.Fatalf("scheme or port differ but matched: %q %q", tmpl, list)
		}
		th, lh := strings.ToLower(tu.Hostname()), strings.ToLower(lu.Hostname())
		if th == lh {
			return
		}
		if net.ParseIP(lh) == nil {
			t.Fatalf("different host names matched: %q %q", tmpl, list)
		}
		if first, _, _ := strings.Cut(th, "."); first != strings.ToLower(name) {
			t.Fatalf("template host %q is not member %q's but matched %q", th, name, list)
		}
		byIP := podIP != "" && net.ParseIP(podIP) != nil && net.ParseIP(podIP).Equal(net.ParseIP(lh))
		if listedName != name && !(id != "" && id == evID) && !byIP {
			t.Fatalf("%q matched %q for %q without evidence (listed %+v, evidence %+v)", tmpl, list, name, listed, ev)
		}
	})
}

// TestEvidenceIgnoresClonedMemberIDs: a member ID two pods answer with
// identifies neither.
func TestEvidenceIgnoresClonedMemberIDs(t *testing.T) {
	obs := healthy()
	obs.Members[2].Engine.MemberID = memberIDs[1]
	c := &classifier{obs: obs}
	if ev := c.evidence("etcd-1"); slices.Contains(ev.MemberIDs, memberIDs[1]) {
		t.Errorf("evidence of etcd-1 holds a member ID etcd-2 answers with too: %+v", ev)
	}
}
