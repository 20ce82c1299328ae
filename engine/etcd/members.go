package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hactl-dev/hactl/model"
)

// Errors the member operations return (wrapped, with the member and the
// engine's own error). Callers test them with errors.Is.
var (
	// ErrMemberNotFound: no member has that ID.
	ErrMemberNotFound = errors.New("member not found")
	// ErrLearnerNotInSync: promote refused because the learner has not
	// caught up with the leader yet; retry later.
	ErrLearnerNotInSync = errors.New("learner not yet in sync with the leader")
	// ErrNotLearner: promote asked for a member that already votes.
	ErrNotLearner = errors.New("member is not a learner")
	// ErrTooManyLearners: the cluster already has the learners it allows.
	ErrTooManyLearners = errors.New("too many learners")
	// ErrPeerURLExists: another member already has that peer URL.
	ErrPeerURLExists = errors.New("peer URL already in use")
	// ErrNotLeader: the call must be sent to the leader.
	ErrNotLeader = errors.New("member is not the leader")
	// ErrNoSpace: the backend quota is exhausted (NOSPACE alarm).
	ErrNoSpace = errors.New("database space exceeded")
	// ErrUnhealthy: the change would leave the cluster without quorum.
	ErrUnhealthy = errors.New("change refused: cluster would become unhealthy")
)

// classify wraps an etcd error with the matching sentinel, if any.
func classify(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range []struct {
		etcd, ours error
	}{
		{rpctypes.ErrMemberNotFound, ErrMemberNotFound},
		{rpctypes.ErrMemberLearnerNotReady, ErrLearnerNotInSync},
		{rpctypes.ErrMemberNotLearner, ErrNotLearner},
		{rpctypes.ErrTooManyLearners, ErrTooManyLearners},
		{rpctypes.ErrPeerURLExist, ErrPeerURLExists},
		{rpctypes.ErrNotLeader, ErrNotLeader},
		{rpctypes.ErrNoSpace, ErrNoSpace},
		{rpctypes.ErrUnhealthy, ErrUnhealthy},
	} {
		if errors.Is(err, m.etcd) {
			return fmt.Errorf("%w: %w", m.ours, err)
		}
	}
	return err
}

// Answered reports whether err is the server's own answer to a request
// (a refusal it decided on: not found, exists, not the leader, a failed
// precondition, no permission), so that the request certainly did not
// change anything beyond what the answer says. Timeouts, cancellations,
// broken connections and unknown errors are not answers: such a request
// may have been committed after the client gave up.
func Answered(err error) bool {
	if err == nil {
		return true
	}
	for _, s := range []error{ErrMemberNotFound, ErrLearnerNotInSync, ErrNotLearner, ErrTooManyLearners,
		ErrPeerURLExists, ErrNotLeader, ErrNoSpace, ErrUnhealthy} {
		if errors.Is(err, s) {
			return true
		}
	}
	code := codes.Unknown
	var ee interface{ Code() codes.Code } // etcd's rpctypes.EtcdError
	var se interface{ GRPCStatus() *status.Status }
	switch {
	case errors.As(err, &ee):
		code = ee.Code()
	case errors.As(err, &se):
		code = se.GRPCStatus().Code()
	}
	switch code {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.FailedPrecondition, codes.Unauthenticated, codes.OutOfRange, codes.Unimplemented:
		return true
	}
	return false
}

// FormatID renders a member or cluster ID in hex, as etcdctl prints it.
func FormatID(id uint64) string { return strconv.FormatUint(id, 16) }

// ParseID reads a hex member ID as FormatID writes it.
func ParseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("invalid etcd member ID %q (want non-zero hex)", s)
	}
	return id, nil
}

func peersOf(ms []*pb.Member) []model.Peer {
	out := make([]model.Peer, 0, len(ms))
	for _, m := range ms {
		out = append(out, peerOf(m))
	}
	return out
}

func peerOf(m *pb.Member) model.Peer {
	return model.Peer{
		ID:         FormatID(m.ID),
		Name:       m.Name,
		PeerURLs:   append([]string(nil), m.PeerURLs...),
		ClientURLs: append([]string(nil), m.ClientURLs...),
		IsLearner:  m.IsLearner,
	}
}

// MemberList returns the member list as this member knows it, answered
// locally (serializable), so a member without quorum, or one that formed
// a cluster of its own, still reports its own view.
func (c *Client) MemberList(ctx context.Context) ([]model.Peer, error) {
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.MemberListResponse, error) {
		return c.cli.MemberList(ctx, clientv3.WithSerializable())
	})
	if err != nil {
		return nil, fmt.Errorf("listing members via %s: %w", c.target.Member, classify(err))
	}
	return peersOf(resp.Members), nil
}

// AlarmList asks the cluster, through this member, for its active alarms.
// Etcd answers it through a raft proposal: it needs quorum and appends to
// the log, so Probe reads alarms from Status instead.
func (c *Client) AlarmList(ctx context.Context) ([]model.Alarm, error) {
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.AlarmResponse, error) { return c.cli.AlarmList(ctx) })
	if err != nil {
		return nil, fmt.Errorf("listing alarms via %s: %w", c.target.Member, classify(err))
	}
	var out []model.Alarm
	for _, a := range resp.Alarms {
		if a.Alarm == pb.AlarmType_NONE {
			continue
		}
		out = append(out, model.Alarm{Type: a.Alarm.String(), MemberID: FormatID(a.MemberID)})
	}
	return mergeAlarms(out, nil), nil
}

// MemberRemove removes the member with the given hex ID and returns the
// member list after the change.
func (c *Client) MemberRemove(ctx context.Context, id string) ([]model.Peer, error) {
	n, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.MemberRemoveResponse, error) { return c.cli.MemberRemove(ctx, n) })
	if err != nil {
		return nil, fmt.Errorf("removing member %s via %s: %w", id, c.target.Member, classify(err))
	}
	return peersOf(resp.Members), nil
}

// MemberAddAsLearner adds a non-voting member with the given peer URLs and
// returns it and the member list after the change.
func (c *Client) MemberAddAsLearner(ctx context.Context, peerURLs ...string) (model.Peer, []model.Peer, error) {
	if len(peerURLs) == 0 {
		return model.Peer{}, nil, errors.New("adding a learner needs at least one peer URL")
	}
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.MemberAddResponse, error) {
		return c.cli.MemberAddAsLearner(ctx, peerURLs)
	})
	if err != nil {
		return model.Peer{}, nil, fmt.Errorf("adding learner %v via %s: %w", peerURLs, c.target.Member, classify(err))
	}
	return peerOf(resp.Member), peersOf(resp.Members), nil
}

// MemberPromote makes the learner with the given hex ID a voting member.
// It fails with ErrLearnerNotInSync until the learner has caught up.
func (c *Client) MemberPromote(ctx context.Context, id string) ([]model.Peer, error) {
	n, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.MemberPromoteResponse, error) { return c.cli.MemberPromote(ctx, n) })
	if err != nil {
		return nil, fmt.Errorf("promoting member %s via %s: %w", id, c.target.Member, classify(err))
	}
	return peersOf(resp.Members), nil
}

// MoveLeader hands leadership to the member with the given hex ID. It must
// be called on the current leader (ErrNotLeader otherwise).
func (c *Client) MoveLeader(ctx context.Context, toID string) error {
	n, err := ParseID(toID)
	if err != nil {
		return err
	}
	if _, err := call(c, ctx, func(ctx context.Context) (*clientv3.MoveLeaderResponse, error) { return c.cli.MoveLeader(ctx, n) }); err != nil {
		return fmt.Errorf("moving leadership to %s via %s: %w", toID, c.target.Member, classify(err))
	}
	return nil
}

// Put writes key=value through this member and returns the revision of the
// write.
func (c *Client) Put(ctx context.Context, key, value string) (int64, error) {
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.PutResponse, error) { return c.cli.Put(ctx, key, value) })
	if err != nil {
		return 0, fmt.Errorf("writing %q via %s: %w", key, c.target.Member, classify(err))
	}
	return resp.Header.GetRevision(), nil
}

// Get reads key from this member's own store (a serializable read: what
// this member would serve, which is the point of a per-member sentinel
// check). found is false when the key does not exist there.
func (c *Client) Get(ctx context.Context, key string) (value string, found bool, err error) {
	resp, err := call(c, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return c.cli.Get(ctx, key, clientv3.WithSerializable())
	})
	if err != nil {
		return "", false, fmt.Errorf("reading %q from %s: %w", key, c.target.Member, classify(err))
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}

// SnapshotInfo identifies a snapshot streamed by Snapshot. The snapshot
// stream itself carries no header, so the identity is read from the same
// member immediately before the stream starts: the snapshot holds at least
// Revision and RaftApplied.
type SnapshotInfo struct {
	ClusterID string
	MemberID  string
	RaftTerm  uint64
	// RaftApplied is the member's applied index just before the snapshot.
	RaftApplied uint64
	// Revision is the store revision just before the snapshot.
	Revision int64
	// StorageVersion is the storage version the stream reported.
	StorageVersion string
	// Size is the number of bytes written to w (the database followed by
	// etcd's 32-byte SHA-256 trailer, as etcdutl snapshot restore expects).
	Size int64
}

// Snapshot streams a backend snapshot of this member to w and reports
// what it is. Bound it with ctx; on error w may hold a partial snapshot.
func (c *Client) Snapshot(ctx context.Context, w io.Writer) (SnapshotInfo, error) {
	st, err := c.status(ctx)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("reading the status of %s before a snapshot: %w", c.target.Member, classify(err))
	}
	rev, err := call(c, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return c.cli.Get(ctx, "\x00", clientv3.WithSerializable(), clientv3.WithCountOnly())
	})
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("reading the revision of %s before a snapshot: %w", c.target.Member, classify(err))
	}
	info := SnapshotInfo{
		ClusterID:   FormatID(st.GetHeader().GetClusterId()),
		MemberID:    FormatID(st.GetHeader().GetMemberId()),
		RaftTerm:    st.RaftTerm,
		RaftApplied: st.RaftAppliedIndex,
		Revision:    rev.Header.GetRevision(),
	}
	sctx, err := c.authed(ctx)
	if err != nil {
		return info, fmt.Errorf("asking %s for an auth token before a snapshot: %w", c.target.Member, classify(err))
	}
	resp, err := c.cli.SnapshotWithVersion(sctx)
	if err != nil {
		return info, fmt.Errorf("starting snapshot of %s: %w", c.target.Member, classify(err))
	}
	defer resp.Snapshot.Close()
	info.StorageVersion = resp.Version
	n, err := io.Copy(w, resp.Snapshot)
	info.Size = n
	if err != nil {
		return info, fmt.Errorf("streaming snapshot of %s after %d bytes: %w", c.target.Member, n, err)
	}
	return info, nil
}
