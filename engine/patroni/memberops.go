package patroni

import (
	"context"
	"errors"
	"fmt"

	"github.com/hactl-dev/hactl/engine"
)

// Actions implements engine.Actioner: the member operations hactl's
// executor uses on a Patroni cluster. MoveLeader is a switchover from
// via.Member (the primary as observed) to toID, sent to via; Patroni's
// 412 (the primary named no longer leads, or the candidate cannot take
// over) is reported as engine.ErrPrecondition. The operations also
// implement engine.Reinitializer (POST /reinitialize to the member). The
// membership operations fail with ErrNotApplicable, as those of Members.
// o.Auth, when set, is sent as basic authentication with every action.
func (Engine) Actions(o engine.ProbeOptions) engine.MemberOps { return restOps{o: o} }

// restOps are the member operations of Actions.
type restOps struct {
	Ops
	o engine.ProbeOptions
}

// auth sends o.Auth, when set, with every action.
func (r restOps) auth() []ActionOption {
	if r.o.Auth == nil {
		return nil
	}
	return []ActionOption{WithBasicAuth(*r.o.Auth)}
}

var (
	_ engine.Actioner      = Engine{}
	_ engine.Reinitializer = restOps{}
)

// MoveLeader switches over from via.Member to toID.
func (r restOps) MoveLeader(ctx context.Context, via engine.Target, toID string) error {
	if via.Member == "" {
		via.Member = via.Pod
	}
	err := Switchover(ctx, via, r.o, via.Member, toID, r.auth()...)
	if errors.Is(err, ErrPrecondition) {
		return fmt.Errorf("%w: %w", engine.ErrPrecondition, err)
	}
	return err
}

// Reinitialize asks member to copy its data again from the primary.
// engine.ErrAlready, engine.ErrNotYet and engine.ErrOutcomeUnknown pass
// through; the leader's refusal is reported as engine.ErrPrecondition
// (the member became the primary since it was observed).
func (r restOps) Reinitialize(ctx context.Context, member engine.Target) error {
	err := Reinitialize(ctx, member, r.o, r.auth()...)
	if errors.Is(err, ErrIsLeader) {
		return fmt.Errorf("%w: %w", engine.ErrPrecondition, err)
	}
	return err
}
