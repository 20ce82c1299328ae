package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// MemberOps changes an engine's membership through one member (the
// leader). Implementations map "already so" to ErrAlready and "not yet" to
// ErrNotYet.
type MemberOps interface {
	RemoveMember(ctx context.Context, via engine.Target, id string) error
	AddLearner(ctx context.Context, via engine.Target, peerURLs []string) (model.Peer, error)
	PromoteLearner(ctx context.Context, via engine.Target, id string) error
	MoveLeader(ctx context.Context, via engine.Target, toID string) error
}

var (
	// ErrAlready: the engine already is as the operation would make it.
	ErrAlready = errors.New("already done")
	// ErrNotYet: the engine is not ready for the operation yet (a learner
	// not in sync); observe again and retry.
	ErrNotYet = errors.New("not yet")
	// ErrOutcomeUnknown: the request was sent and no answer came back (a
	// timeout, a broken connection): the engine may have committed it.
	// The caller observes to find out; it never reads it as "nothing
	// changed".
	ErrOutcomeUnknown = errors.New("outcome unknown")
)

// EtcdOps is MemberOps for etcd, one client per call, dialled with Dial
// (never following advertised URLs).
type EtcdOps struct {
	Dial        engine.DialFunc
	Timeout     time.Duration
	Credentials *engine.Credentials
}

func (e EtcdOps) open(ctx context.Context, via engine.Target) (*etcdengine.Client, error) {
	return etcdengine.Open(ctx, via, engine.ProbeOptions{Dial: e.Dial, Timeout: e.timeout(), Credentials: e.Credentials})
}

func (e EtcdOps) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 5 * time.Second
}

// call runs f on a client of via. etcd's own guard ("unhealthy cluster":
// the leader has not been connected to a quorum long enough, or the change
// would leave too few active members) is reported as ErrNotYet: the
// executor observes again and retries within its wait timeout.
func (e EtcdOps) call(ctx context.Context, via engine.Target, f func(context.Context, *etcdengine.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*e.timeout())
	defer cancel()
	c, err := e.open(ctx, via)
	if err != nil {
		return err
	}
	defer c.Close()
	err = f(ctx, c)
	switch {
	case err == nil, errors.Is(err, ErrAlready), errors.Is(err, ErrNotYet):
		return err
	case errors.Is(err, etcdengine.ErrUnhealthy):
		return fmt.Errorf("%w: %w", ErrNotYet, err)
	case !etcdengine.Answered(err):
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return err
}

// RemoveMember implements MemberOps.
func (e EtcdOps) RemoveMember(ctx context.Context, via engine.Target, id string) error {
	return e.call(ctx, via, func(ctx context.Context, c *etcdengine.Client) error {
		_, err := c.MemberRemove(ctx, id)
		if errors.Is(err, etcdengine.ErrMemberNotFound) {
			return fmt.Errorf("%w: %w", ErrAlready, err)
		}
		return err
	})
}

// AddLearner implements MemberOps.
func (e EtcdOps) AddLearner(ctx context.Context, via engine.Target, peerURLs []string) (model.Peer, error) {
	var p model.Peer
	err := e.call(ctx, via, func(ctx context.Context, c *etcdengine.Client) error {
		var err error
		p, _, err = c.MemberAddAsLearner(ctx, peerURLs...)
		if errors.Is(err, etcdengine.ErrPeerURLExists) {
			return fmt.Errorf("%w: %w", ErrAlready, err)
		}
		return err
	})
	return p, err
}

// PromoteLearner implements MemberOps.
func (e EtcdOps) PromoteLearner(ctx context.Context, via engine.Target, id string) error {
	return e.call(ctx, via, func(ctx context.Context, c *etcdengine.Client) error {
		_, err := c.MemberPromote(ctx, id)
		switch {
		case errors.Is(err, etcdengine.ErrNotLearner):
			return fmt.Errorf("%w: %w", ErrAlready, err)
		case errors.Is(err, etcdengine.ErrLearnerNotInSync):
			return fmt.Errorf("%w: %w", ErrNotYet, err)
		}
		return err
	})
}

// MoveLeader implements MemberOps.
func (e EtcdOps) MoveLeader(ctx context.Context, via engine.Target, toID string) error {
	return e.call(ctx, via, func(ctx context.Context, c *etcdengine.Client) error {
		err := c.MoveLeader(ctx, toID)
		if errors.Is(err, etcdengine.ErrNotLeader) {
			return fmt.Errorf("%w: %w", ErrNotYet, err)
		}
		return err
	})
}

// Credentials reads the client TLS material a cluster names with the
// annotation hactl.dev/client-tls-secret; nil when it names none. Errors
// name the Secret, never its contents.
func Credentials(ctx context.Context, c kubernetes.Interface, cl model.ClusterFacts) (*engine.Credentials, error) {
	return status.ReadCredentials(ctx, status.SecretsFrom(c), cl, "act on the members")
}

// target is how to dial a member.
func target(cl model.ClusterFacts, member string) engine.Target {
	t := engine.Target{Member: member, Namespace: cl.Namespace, Pod: member, Port: cl.Template.ClientPort}
	if t.Port == 0 {
		t.Port = 2379
	}
	if cl.ServiceName != "" {
		t.ServerName = member + "." + cl.ServiceName + "." + cl.Namespace + ".svc"
	}
	return t
}
