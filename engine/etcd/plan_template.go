package etcd

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// ErrInitialCluster marks an --initial-cluster value that does not parse
// (model.ErrInitialCluster).
var ErrInitialCluster = model.ErrInitialCluster

// ParseInitialCluster reads etcd's --initial-cluster value (see
// model.ParseInitialCluster).
func ParseInitialCluster(s string) ([]model.InitialClusterEntry, error) {
	return model.ParseInitialCluster(s)
}

// Evidence is what was observed of one member's own pod: its name, the
// pod's IPs and the member IDs its own probe reported (or the ledger
// recorded for the member an action replaces). It is what lets an IP in
// the member list stand for a DNS name in the template.
type Evidence struct {
	Name      string
	PodIPs    []string
	MemberIDs []string
}

// PeerURLMatches reports whether a template's peer URL for the member
// ev.Name denotes listURL, the peer URL that member list entry listed
// holds. They match when equal (host compared without case). When the
// member list holds an IP address where the template names a DNS name
// whose first label is the member's (<name>.<service>…), with the same
// scheme and port, they match only on evidence that the listed entry is
// that member's: its member ID is one the member's own pod answered with,
// the IP is one of the pod's IPs, or etcd lists it under the member's
// name. A hostname prefix alone never identifies a member: every IP would
// match it.
func PeerURLMatches(templateURL, listURL string, listed model.Peer, ev Evidence) bool {
	if templateURL == listURL {
		return true
	}
	t, err1 := url.Parse(templateURL)
	l, err2 := url.Parse(listURL)
	if err1 != nil || err2 != nil || t.Scheme != l.Scheme || t.Port() != l.Port() {
		return false
	}
	th, lh := strings.ToLower(t.Hostname()), strings.ToLower(l.Hostname())
	if th == lh {
		return true
	}
	if net.ParseIP(lh) == nil || net.ParseIP(th) != nil || ev.Name == "" {
		return false
	}
	if first, _, _ := strings.Cut(th, "."); first != strings.ToLower(ev.Name) {
		return false
	}
	return listed.Name == ev.Name ||
		(listed.ID != "" && slices.Contains(ev.MemberIDs, listed.ID)) ||
		slices.ContainsFunc(ev.PodIPs, func(ip string) bool { return sameIP(ip, lh) })
}

func sameIP(a, b string) bool {
	x, y := net.ParseIP(a), net.ParseIP(b)
	return x != nil && y != nil && x.Equal(y)
}

// anyURLMatches reports whether one of the template URLs for ev.Name
// matches one of the listed entry's URLs.
func anyURLMatches(tmpl []string, listed model.Peer, ev Evidence) bool {
	for _, t := range tmpl {
		for _, l := range listed.PeerURLs {
			if PeerURLMatches(t, l, listed, ev) {
				return true
			}
		}
	}
	return false
}

// templateURLs groups initial-cluster entries by name.
func templateURLs(entries []model.InitialClusterEntry) map[string][]string {
	out := map[string][]string{}
	for _, e := range entries {
		out[e.Name] = append(out[e.Name], e.PeerURL)
	}
	return out
}

// checkTemplate verifies that a member recreated from the template on an
// empty volume, with state "existing", would be accepted by the cluster:
// etcd compares the template's --initial-cluster with the member list
// (after the replacement) and refuses to start when the counts differ
// ("member count is unequal") or a peer URL does not match. after is the
// member list as it will be once the target's replacement is added: every
// member but the replaced one, plus the target with peerURLs.
//
// evidence tells what was observed of each member's pod (see
// PeerURLMatches).
func checkTemplate(t model.TemplateFacts, after []model.Peer, evidence func(name string) Evidence) (ok bool, detail string) {
	if !t.InitialClusterDecoded {
		return false, "the observation does not carry the template's --initial-cluster; observe through hactl's action observer"
	}
	if len(t.InitialCluster) == 0 {
		return false, "the pod template sets no --initial-cluster (nor ETCD_INITIAL_CLUSTER): a member recreated on an empty volume could not find its peers"
	}
	byName := templateURLs(t.InitialCluster)
	if len(byName) != len(after) {
		return false, fmt.Sprintf("the template's --initial-cluster names %d members (%s) but the cluster will have %d: a recreated member would fail with \"member count is unequal\"; update the template first",
			len(byName), strings.Join(sortedKeys(byName), ", "), len(after))
	}
	var bad []string
	for _, p := range after {
		if p.Name == "" {
			// An unstarted learner has no name yet; match it by URL.
			found := false
			for n, urls := range byName {
				if anyURLMatches(urls, p, evidence(n)) {
					found = true
				}
			}
			if !found {
				bad = append(bad, fmt.Sprintf("member %s (%s) is not in the template", p.ID, strings.Join(p.PeerURLs, ",")))
			}
			continue
		}
		urls, ok := byName[p.Name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("member %s is not in the template", p.Name))
		case !anyURLMatches(urls, p, evidence(p.Name)):
			bad = append(bad, fmt.Sprintf("member %s has peer URL %s, the template says %s", p.Name, strings.Join(p.PeerURLs, ","), strings.Join(urls, ",")))
		}
	}
	if len(bad) > 0 {
		return false, "the template's --initial-cluster does not match the member list: " + strings.Join(bad, "; ") + "; a recreated member would not be accepted"
	}
	return true, ""
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
