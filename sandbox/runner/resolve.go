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

// Subdomain names a pod that sets spec.hostname and spec.subdomain (as the
// cozystack etcd-operator's member pods do): a headless Service named
// Subdomain in its namespace makes it
// <Hostname>.<Subdomain>.<Namespace>.svc...
type Subdomain struct {
	Namespace, Pod, Hostname, Subdomain string
}

var reOrdinal = regexp.MustCompile(`^(.+)-(\d+)$`)

// splitPodDNS splits host, as seen from a pod in namespace ns, into its
// first two labels and the namespace it names, when it has one of the
// forms a cluster's resolver accepts for a pod under a Service:
//
//	<first>.<service>
//	<first>.<service>.<namespace>
//	<first>.<service>.<namespace>.svc
//	<first>.<service>.<namespace>.svc.cluster.local
//
// A trailing dot is allowed.
func splitPodDNS(host, ns string) (first, svc, podNS string, ok bool) {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	if len(labels) < 2 {
		return "", "", "", false
	}
	first, svc, rest := labels[0], labels[1], labels[2:]
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
		return "", "", "", false
	}
	return first, svc, podNS, true
}

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
	pod, svc, podNS, ok := splitPodDNS(host, ns)
	if !ok {
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

// ResolveSubdomainDNS resolves host, as seen from a pod in namespace ns,
// to the (namespace, pod) it names when it is
// <hostname>.<subdomain>[.<namespace>[.svc[.cluster.local]]] of one of
// pods (pods that set spec.hostname and spec.subdomain). Unlike a
// StatefulSet's, such a name exists only while its pod does.
func ResolveSubdomainDNS(host, ns string, pods []Subdomain) (podNS, pod string, ok bool) {
	hostname, sub, podNS, ok := splitPodDNS(host, ns)
	if !ok {
		return "", "", false
	}
	for _, p := range pods {
		if p.Namespace == podNS && strings.EqualFold(p.Hostname, hostname) && strings.EqualFold(p.Subdomain, sub) {
			return podNS, p.Pod, true
		}
	}
	return "", "", false
}
