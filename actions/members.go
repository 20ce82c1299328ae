package actions

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// MemberOps changes an engine's membership through one member (the
// leader); each engine offers it (engine.MemberOps).
type MemberOps = engine.MemberOps

// The outcomes member operations report (see engine).
var (
	ErrAlready        = engine.ErrAlready
	ErrNotYet         = engine.ErrNotYet
	ErrOutcomeUnknown = engine.ErrOutcomeUnknown
)

// Credentials reads the client TLS material a cluster names with the
// annotation hactl.dev/client-tls-secret; nil when it names none. Errors
// name the Secret, never its contents.
func Credentials(ctx context.Context, c kubernetes.Interface, cl model.ClusterFacts) (*engine.Credentials, error) {
	return status.ReadCredentials(ctx, status.SecretsFrom(c), cl, "act on the members")
}

// RESTAuth reads the user and password the engine's actions send: the
// password the members ask every client for, where the template names
// one (etcd's auth), else the REST API credentials a cluster names with
// the annotation hactl.dev/rest-auth-secret; nil when it names none.
// Errors name the Secret, never its contents.
func RESTAuth(ctx context.Context, c kubernetes.Interface, cl model.ClusterFacts) (*engine.BasicAuth, error) {
	if cl.Template.Password != nil {
		// The members ask every client for a password (etcd's auth).
		return status.ReadMemberAuth(ctx, status.SecretsFrom(c), cl, "act on the members")
	}
	return status.ReadRESTAuth(ctx, status.SecretsFrom(c), cl, "act on the members")
}

// target is how to dial a member.
func target(cl model.ClusterFacts, member string) engine.Target {
	t := engine.Target{Member: member, Namespace: cl.Namespace, Cluster: cl.Name, Pod: member, Port: cl.Template.ClientPort}
	if t.Port == 0 {
		t.Port = 2379
	}
	if cl.ServiceName != "" {
		t.ServerName = member + "." + cl.ServiceName + "." + cl.Namespace + ".svc"
	}
	return t
}
