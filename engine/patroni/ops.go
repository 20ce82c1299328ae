package patroni

import (
	"context"
	"errors"
	"fmt"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// ErrNotApplicable: the member operation has no Patroni counterpart.
// Patroni has no raft membership to edit: a member is a pod running
// Patroni, it joins by bootstrapping from the leader and leaves when its
// DCS key expires. It does not wrap engine.ErrOutcomeUnknown, ErrAlready or
// ErrNotYet: nothing was sent.
var ErrNotApplicable = errors.New("does not apply to Patroni")

// Members implements engine.Engine. Every operation of the returned
// MemberOps fails with ErrNotApplicable; Patroni's own actions are
// Switchover and Reinitialize.
func (Engine) Members(engine.ProbeOptions) engine.MemberOps { return Ops{} }

// Ops is engine.MemberOps for Patroni: none applies.
type Ops struct{}

var _ engine.MemberOps = Ops{}

func notApplicable(op, instead string) error {
	return fmt.Errorf("%s %w (it has no raft membership): %s", op, ErrNotApplicable, instead)
}

// RemoveMember implements engine.MemberOps.
func (Ops) RemoveMember(context.Context, engine.Target, string) error {
	return notApplicable("removing a member", "a member leaves when its pod is deleted and its DCS key expires")
}

// AddLearner implements engine.MemberOps.
func (Ops) AddLearner(context.Context, engine.Target, []string) (model.Peer, error) {
	return model.Peer{}, notApplicable("adding a learner", "a new pod bootstraps from the leader by itself")
}

// PromoteLearner implements engine.MemberOps.
func (Ops) PromoteLearner(context.Context, engine.Target, string) error {
	return notApplicable("promoting a learner", "every running replica is already a failover candidate")
}

// MoveLeader implements engine.MemberOps.
func (Ops) MoveLeader(context.Context, engine.Target, string) error {
	return notApplicable("moving the leader through the member operations", "use Switchover")
}
