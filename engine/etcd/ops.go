package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Members implements engine.Engine.
func (Engine) Members(o engine.ProbeOptions) engine.MemberOps {
	return Ops{Dial: o.Dial, Timeout: o.Timeout, Credentials: o.Credentials, Auth: o.Auth}
}

// Ops is engine.MemberOps for etcd, one client per call, dialled with Dial
// (never following advertised URLs).
type Ops struct {
	Dial        engine.DialFunc
	Timeout     time.Duration
	Credentials *engine.Credentials
	// Auth is the user and password of a cluster with auth enabled.
	Auth *engine.BasicAuth
}

func (e Ops) open(ctx context.Context, via engine.Target) (*Client, error) {
	return Open(ctx, via, engine.ProbeOptions{Dial: e.Dial, Timeout: e.timeout(), Credentials: e.Credentials, Auth: e.Auth})
}

func (e Ops) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 5 * time.Second
}

// call runs f on a client of via. etcd's own guard ("unhealthy cluster":
// the leader has not been connected to a quorum long enough, or the change
// would leave too few active members) is reported as engine.ErrNotYet: the
// executor observes again and retries within its wait timeout.
func (e Ops) call(ctx context.Context, via engine.Target, f func(context.Context, *Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*e.timeout())
	defer cancel()
	c, err := e.open(ctx, via)
	if err != nil {
		return err
	}
	defer c.Close()
	err = f(ctx, c)
	switch {
	case err == nil, errors.Is(err, engine.ErrAlready), errors.Is(err, engine.ErrNotYet):
		return err
	case errors.Is(err, ErrUnhealthy):
		return fmt.Errorf("%w: %w", engine.ErrNotYet, err)
	case !Answered(err):
		return fmt.Errorf("%w: %w", engine.ErrOutcomeUnknown, err)
	}
	return err
}

// RemoveMember implements engine.MemberOps.
func (e Ops) RemoveMember(ctx context.Context, via engine.Target, id string) error {
	return e.call(ctx, via, func(ctx context.Context, c *Client) error {
		_, err := c.MemberRemove(ctx, id)
		if errors.Is(err, ErrMemberNotFound) {
			return fmt.Errorf("%w: %w", engine.ErrAlready, err)
		}
		return err
	})
}

// AddLearner implements engine.MemberOps.
func (e Ops) AddLearner(ctx context.Context, via engine.Target, peerURLs []string) (model.Peer, error) {
	var p model.Peer
	err := e.call(ctx, via, func(ctx context.Context, c *Client) error {
		var err error
		p, _, err = c.MemberAddAsLearner(ctx, peerURLs...)
		if errors.Is(err, ErrPeerURLExists) {
			return fmt.Errorf("%w: %w", engine.ErrAlready, err)
		}
		return err
	})
	return p, err
}

// PromoteLearner implements engine.MemberOps.
func (e Ops) PromoteLearner(ctx context.Context, via engine.Target, id string) error {
	return e.call(ctx, via, func(ctx context.Context, c *Client) error {
		_, err := c.MemberPromote(ctx, id)
		switch {
		case errors.Is(err, ErrNotLearner):
			return fmt.Errorf("%w: %w", engine.ErrAlready, err)
		case errors.Is(err, ErrLearnerNotInSync):
			return fmt.Errorf("%w: %w", engine.ErrNotYet, err)
		}
		return err
	})
}

// MoveLeader implements engine.MemberOps.
func (e Ops) MoveLeader(ctx context.Context, via engine.Target, toID string) error {
	return e.call(ctx, via, func(ctx context.Context, c *Client) error {
		err := c.MoveLeader(ctx, toID)
		if errors.Is(err, ErrNotLeader) {
			return fmt.Errorf("%w: %w", engine.ErrNotYet, err)
		}
		return err
	})
}
