package etcd

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

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
	ids := []string{"8e9e05c52164694d", "91bc3c398fb3c146", "91bc3c398fb3c146"}
	obs := model.Observation{}
	for i, id := range ids {
		name := fmt.Sprintf("etcd-%d", i)
		obs.Members = append(obs.Members, model.Member{Name: name, Ordinal: i,
			Pod:    &model.PodFacts{Name: name, IPs: []string{fmt.Sprintf("10.0.0.%d", i+1)}},
			Engine: &model.EngineFacts{Reachable: true, MemberID: id}})
	}
	c := etcd{observed{obs: &obs}}
	if ev := c.evidence("etcd-1"); slices.Contains(ev.MemberIDs, ids[1]) {
		t.Errorf("evidence of etcd-1 holds a member ID etcd-2 answers with too: %+v", ev)
	}
}

// observed is a model.Plan of obs alone, for the helpers that read only
// the members.
type observed struct {
	model.Plan
	obs *model.Observation
}

func (p observed) Member(name string) *model.Member {
	for i := range p.obs.Members {
		if p.obs.Members[i].Name == name {
			return &p.obs.Members[i]
		}
	}
	return nil
}

func (observed) Resume() *model.LedgerEntry { return nil }

func (p observed) Observation() *model.Observation { return p.obs }
