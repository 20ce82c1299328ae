package runner

import (
	"regexp"
	"strings"
)

// Governor names a StatefulSet that governs DNS names through its headless
// Service: its pods are <Name>-<ordinal>.<Service>.<Namespace>.svc...
type Governor struct {
	Namespace, Name, Service string
}

var reOrdinal = regexp.MustCompile(`^(.+)-(\d+)$`)

// ResolvePodDNS resolves host, as seen from a pod in namespace ns, to the
// (namespace, pod) it names when it is a StatefulSet pod's DNS name in one
// of the forms a cluster's resolver accepts:
//
//	<pod>.<service>
//	<pod>.<service>.<namespace>
//	<pod>.<service>.<namespace>.svc
//	<pod>.<service>.<namespace>.svc.cluster.local
//
// A trailing dot is allowed. The pod need not exist yet (peers name
// members that are still being created).
func ResolvePodDNS(host, ns string, governors []Governor) (podNS, pod string, ok bool) {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	if len(labels) < 2 {
		return "", "", false
	}
	pod, svc, rest := labels[0], labels[1], labels[2:]
	podNS = ns
	switch {
	case len(rest) == 0:
	case len(rest) == 1:
		podNS = rest[0]
	case len(rest) == 2 && rest[1] == "svc":
		podNS = rest[0]
	case len(rest) == 4 && rest[1] == "svc" && rest[2] == "cluster" && rest[3] == "local":
		podNS = rest[0]
	default:
		return "", "", false
	}
	m := reOrdinal.FindStringSubmatch(pod)
	if m == nil {
		return "", "", false
	}
	for _, g := range governors {
		if g.Namespace == podNS && g.Service == svc && g.Name == m[1] {
			return podNS, pod, true
		}
	}
	return "", "", false
}
