package model

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrInitialCluster marks an --initial-cluster value that does not parse.
var ErrInitialCluster = errors.New("invalid --initial-cluster")

// ParseInitialCluster reads etcd's --initial-cluster value:
// comma-separated name=peerURL pairs (a name may repeat, one pair per
// URL). It rejects empty names, URLs without scheme or host, and empty
// pairs.
func ParseInitialCluster(s string) ([]InitialClusterEntry, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []InitialClusterEntry
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		name, raw, ok := strings.Cut(pair, "=")
		if !ok || name == "" || raw == "" {
			return nil, fmt.Errorf("%w: %q is not name=peerURL", ErrInitialCluster, pair)
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("%w: %q has no scheme://host:port peer URL", ErrInitialCluster, pair)
		}
		out = append(out, InitialClusterEntry{Name: name, PeerURL: raw})
	}
	return out, nil
}

// OwnerKubelet is the owner of static pods' templates (OperatorOwner):
// the kubelet runs each from a file on its node.
const OwnerKubelet = "kubelet"

// Shape classifies how a recreated member would boot on an empty
// volume, from the pod template's engine-relevant facts.
//
// The order matters: ownership by an operator trumps everything (hactl only
// diagnoses such clusters), a self-registering entrypoint is recognised
// before the literal state flag (its scripts pass "new" only while the
// cluster forms), and a hard-coded "new" outranks a plain "existing".
func (t TemplateFacts) Shape() Shape {
	switch {
	case t.OperatorOwner == OwnerKubelet:
		return ShapeStaticPods
	case t.OperatorOwner != "" || t.BackupSidecar:
		return ShapeOperatorOwned
	case t.SelfRegistering:
		return ShapeSelfRegistering
	case t.InitialClusterState == "new":
		return ShapeStaticNew
	case t.ShellWrapper || t.PreStopCallsEngineCLI:
		// A wrapper we do not recognise may call member add/remove on its
		// own: acting alongside it is unsafe.
		return ShapeUnknown
	case t.InitialClusterState == "existing":
		return ShapeStaticExisting
	}
	return ShapeUnknown
}
