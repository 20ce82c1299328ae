package etcd

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Engine is the etcd implementation of engine.Engine.
type Engine struct{}

var _ engine.Engine = Engine{}

// New returns the etcd engine.
func New() Engine { return Engine{} }

// Name implements engine.Engine.
func (Engine) Name() model.Engine { return Name }

// Name is etcd's engine name: the value of the hactl.dev/engine label on
// its clusters.
const Name model.Engine = "etcd"

// Probe implements engine.Engine: one client per target, all in parallel,
// each bounded by o.Timeout. Every client is closed before Probe returns,
// unless a dialer ignored its deadline, in which case that member is
// reported unanswered and its client closes in the background.
func (Engine) Probe(ctx context.Context, targets []engine.Target, o engine.ProbeOptions) []model.EngineFacts {
	o = o.WithDefaults()
	if o.Unasked != nil {
		// The client port needs what hactl was not given: what the
		// metrics listener says, where there is one.
		return engine.ProbeEach(ctx, targets, o, func(ctx context.Context, t engine.Target, start time.Time) model.EngineFacts {
			f := engine.UnaskedFacts([]engine.Target{t}, o)[0]
			f.ProbedAt, f.Metrics = start, readMetrics(ctx, t, o)
			f.Took = time.Since(start)
			return f
		})
	}
	return engine.ProbeEach(ctx, targets, o, func(ctx context.Context, t engine.Target, start time.Time) model.EngineFacts {
		// The peer port's certificate expires as the client port's
		// does, and breaks the members' own traffic when it does: read
		// beside the probe, within half its time.
		others := make(chan []model.CertFacts, 1)
		go func() { others <- otherCerts(ctx, t, o) }()
		f := ask(ctx, t, o, start)
		f.ServingCerts = append(f.ServingCerts, <-others...)
		if f.Failure == model.ProbeFailureCredentials {
			// What the plaintext metrics listener says, where there
			// is one: a few facts, the rest said to be unknown.
			f.Metrics = readMetrics(ctx, t, o)
		}
		return f
	})
}

// otherCerts reads the certificates of t's other TLS ports (t.CertPorts)
// with a handshake each, within half the probe's timeout.
func otherCerts(ctx context.Context, t engine.Target, o engine.ProbeOptions) []model.CertFacts {
	if len(t.CertPorts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout/2)
	defer cancel()
	var out []model.CertFacts
	for _, port := range t.CertPorts {
		if port == t.Port {
			continue // the probe's own handshake reads it
		}
		if c := engine.ReadCert(ctx, o.Dial, t, o.Credentials, port); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// certRefresh is how often the certificate of a kept connection's port
// is read again with a handshake of its own: the connection handshook
// once, and a member serves a renewed certificate only on new ones.
var certRefresh = 5 * time.Minute

// ask reads member t's facts, through a client o.Conns keeps or one of
// its own.
func ask(ctx context.Context, t engine.Target, o engine.ProbeOptions, start time.Time) model.EngineFacts {
	if o.Conns != nil {
		return probeKept(ctx, t, o, start)
	}
	c, err := Open(ctx, t, o)
	if err != nil {
		return openFailed(t, start, err)
	}
	defer c.Close()
	return c.Facts(ctx)
}

// probeKept asks t through the client o.Conns keeps for it, opening (and
// keeping) one when there is none. A member that did not answer loses its
// client: the next round dials afresh, and nothing reconnects meanwhile.
func probeKept(ctx context.Context, t engine.Target, o engine.ProbeOptions, start time.Time) model.EngineFacts {
	key := engine.ConnKey(string(Name), t, o.Credentials, o.Auth)
	var c *Client
	if v, ok := o.Conns.Get(key); ok {
		c = v.(*Client)
	} else {
		// The client outlives this round: its life is the cache's, each
		// call is bounded by ctx (and each dial by o.Timeout).
		nc, err := Open(o.Conns.Context(), t, o)
		if err != nil {
			return openFailed(t, start, err)
		}
		nc.keepPeers = true
		if o.Conns.Put(key, nc) {
			c = nc
		} else if v, ok := o.Conns.Get(key); ok {
			_ = nc.Close()
			c = v.(*Client)
		} else {
			// The cache is closed: probe once without keeping it.
			defer nc.Close()
			c = nc
		}
	}
	c.state.Restart()
	f := c.Facts(ctx)
	if !f.Reachable {
		o.Conns.Drop(key, c)
		return f
	}
	c.mu.Lock()
	due := o.Credentials != nil && time.Since(c.certRead) > certRefresh
	if due {
		c.certRead = time.Now()
	}
	c.mu.Unlock()
	if due {
		if fresh := engine.ReadCert(ctx, o.Dial, t, o.Credentials, t.Port); fresh != nil {
			c.state.SetCert(fresh)
			f.ServingCerts = engine.Certs(fresh)
		}
	}
	return f
}

// openFailed reports a client that could not even be built.
func openFailed(t engine.Target, start time.Time, err error) model.EngineFacts {
	f := model.EngineFacts{ProbedAt: start, Took: time.Since(start), Failure: model.ProbeFailureOther}
	f.Err = fmt.Sprintf("%s: %v", t.Member, err)
	var ce *credentialsError
	if errors.As(err, &ce) {
		f.Failure = model.ProbeFailureCredentials
	}
	if why := authRefusal(err); why != "" {
		f.Failure, f.Err = model.ProbeFailureCredentials, fmt.Sprintf("%s refused the client: %s", t.Member, why)
	}
	return f
}

// authRefusal says why a member with auth enabled refused the client
// (no user given, or a user or password it does not take), "" for any
// other error. It never repeats what was sent.
func authRefusal(err error) string {
	is := func(etcdErr, grpcErr error) bool {
		return errors.Is(err, etcdErr) || errors.Is(err, grpcErr) || rpctypes.Error(errors.Unwrap(err)) == etcdErr || rpctypes.Error(err) == etcdErr
	}
	switch {
	case is(rpctypes.ErrUserEmpty, rpctypes.ErrGRPCUserEmpty):
		return "auth is enabled: it asks every client for a user and password, and none was given (hactl reads the password a Secret reference in the pod template names: ETCD_ROOT_PASSWORD)"
	case is(rpctypes.ErrAuthFailed, rpctypes.ErrGRPCAuthFailed):
		return "auth is enabled, and it does not take the user and password given (authentication failed): check the Secret the pod template names"
	case is(rpctypes.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied):
		return "auth is enabled, and the user given may not ask it (" + rpctypes.ErrorDesc(err) + ")"
	case is(rpctypes.ErrInvalidAuthToken, rpctypes.ErrGRPCInvalidAuthToken):
		return "auth is enabled, and it no longer takes the client's token (expired, or the member restarted): the next probe asks for another"
	}
	return ""
}

// Facts asks this client's member about itself, bounded by ctx. It never
// returns an error: a member that does not answer Status is reported with
// Reachable false, Failure and Err set. Status alone decides
// reachability; the member list and alarms are best effort on top of it.
func (c *Client) Facts(ctx context.Context) (f model.EngineFacts) {
	start := time.Now()
	f.ProbedAt = start
	defer func() { f.Took, f.ServingCerts = time.Since(start), engine.Certs(c.state.Snapshot().Cert) }()
	if c.keepPeers {
		return c.factsKeepingPeers(ctx, start, f)
	}

	// The member list is asked beside Status, over the same connection:
	// a probe takes one round trip, not two. Its answer is used only if
	// Status answered and the member is not a learner.
	lctx, cancelList := context.WithCancel(ctx)
	var peers []model.Peer
	var listErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		peers, listErr = c.MemberList(lctx)
	}()
	defer func() {
		cancelList()
		<-listed
	}()

	if !c.statusFacts(ctx, start, &f) {
		return f
	}
	<-listed
	if listErr != nil {
		_, f.PeersErr = c.explain(ctx, start, "MemberList", listErr)
		return f
	}
	f.Peers = peers
	return f
}

// statusFacts asks Status and fills f from it; false when there is no
// member list to add: Status failed (f says why) or the member is a
// learner.
func (c *Client) statusFacts(ctx context.Context, start time.Time, f *model.EngineFacts) bool {
	st, err := c.status(ctx)
	if err != nil {
		f.Failure, f.Err = c.explain(ctx, start, "Status", err)
		return false
	}
	f.Reachable = true
	fillStatus(f, st)
	// Etcd lists every active alarm in the Status errors, from its local
	// alarm store. The alarm RPC is not used here: etcd serves even its
	// "get" through a raft proposal, so every probe would append an entry
	// to the log (and fsync it on every member), moving the raft index of
	// an idle cluster and waiting out the deadline on a member without
	// quorum.
	f.Alarms = alarmsFromErrors(st.Errors)
	// A learner serves Status and serializable reads only.
	if st.IsLearner {
		f.PeersErr = "a learner does not serve the member list"
		return false
	}
	return true
}

// knownPeers is a member list and the member's state when it was asked
// for, right after a Status that reported that state.
type knownPeers struct {
	at    peersState
	peers []model.Peer
}

// peersState is what a member's Status says of its applied log. Etcd
// changes its membership only by applying a log entry, so a member that
// reports the same cluster, member, term and applied index as when its
// member list was read still has that list.
type peersState struct {
	clusterID, memberID string
	term, applied       uint64
}

func stateOf(f model.EngineFacts) peersState {
	return peersState{clusterID: f.ClusterID, memberID: f.MemberID, term: f.RaftTerm, applied: f.RaftApplied}
}

// factsKeepingPeers is Facts for a kept client: Status, then the member
// list only when the member applied anything since the list it has (an
// idle cluster's refresh is one round trip per member). The list is read
// after the Status whose state it is kept with, so it holds at least that
// state; while the state is unchanged, exactly that state.
func (c *Client) factsKeepingPeers(ctx context.Context, start time.Time, f model.EngineFacts) model.EngineFacts {
	if !c.statusFacts(ctx, start, &f) {
		return f
	}
	at := stateOf(f)
	c.mu.Lock()
	known := c.known
	c.mu.Unlock()
	if known != nil && known.at == at {
		f.Peers = slices.Clone(known.peers)
		return f
	}
	peers, err := c.MemberList(ctx)
	if err != nil {
		_, f.PeersErr = c.explain(ctx, start, "MemberList", err)
		return f
	}
	c.mu.Lock()
	c.known = &knownPeers{at: at, peers: peers}
	c.mu.Unlock()
	f.Peers = slices.Clone(peers)
	return f
}

func (c *Client) status(ctx context.Context) (*pb.StatusResponse, error) {
	ctx, err := c.authed(ctx)
	if err != nil {
		return nil, &authError{err: err}
	}
	// The maintenance client's Status(endpoint) would open a second
	// connection; ask over the one this client has.
	m := clientv3.RetryMaintenanceClient(c.cli, c.cli.ActiveConnection())
	st, err := m.Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(true))
	return st, c.checked(err)
}

// authError is a failed request for an auth token.
type authError struct{ err error }

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

func fillStatus(f *model.EngineFacts, st *pb.StatusResponse) {
	if h := st.GetHeader(); h != nil {
		f.MemberID = FormatID(h.MemberId)
		f.ClusterID = FormatID(h.ClusterId)
	}
	if st.Leader != 0 {
		f.LeaderID = FormatID(st.Leader)
	}
	f.RaftTerm = st.RaftTerm
	f.RaftIndex = st.RaftIndex
	f.RaftApplied = st.RaftAppliedIndex
	f.IsLearner = st.IsLearner
	f.DBSize = st.DbSize
	f.DBSizeInUse = st.DbSizeInUse
	f.DBSizeQuota = st.DbSizeQuota
	f.Version = st.Version
	f.StorageVersion = st.StorageVersion
	for _, e := range st.Errors {
		if e = strings.TrimSpace(e); e != "" {
			f.Errors = append(f.Errors, e)
		}
	}
}

// alarmError matches how etcd renders an active alarm in Status errors:
// the protobuf text of an AlarmMember, "memberID:123 alarm:NOSPACE".
var alarmError = regexp.MustCompile(`^memberID:\s*(\d+)\s+alarm:\s*([A-Z_]+)\s*$`)

func alarmsFromErrors(errs []string) []model.Alarm {
	var out []model.Alarm
	for _, e := range errs {
		m := alarmError.FindStringSubmatch(strings.TrimSpace(e))
		if m == nil {
			continue
		}
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, model.Alarm{Type: m[2], MemberID: FormatID(id)})
	}
	return mergeAlarms(out, nil)
}

func mergeAlarms(a, b []model.Alarm) []model.Alarm {
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(x, y model.Alarm) int {
		if c := strings.Compare(x.Type, y.Type); c != 0 {
			return c
		}
		return strings.Compare(x.MemberID, y.MemberID)
	})
	return slices.Compact(all)
}

// explain turns a failed call into a failure kind and a message that says
// what was being waited for, for how long, and the last thing the
// connection reported. It never includes credentials: dial and TLS errors
// name hosts and certificate subjects at most.
func (c *Client) explain(ctx context.Context, start time.Time, call string, err error) (model.ProbeFailure, string) {
	took := engine.RoundDuration(time.Since(start))
	st := c.state.Snapshot()
	dials, connected, dialErr, hsErr, fwdErr := st.Dials, st.Connected, st.DialErr, st.HandshakeErr, st.ForwardErr
	member := c.target.Member

	if hsErr != nil && engine.IsCredentialsError(hsErr) {
		return model.ProbeFailureCredentials, fmt.Sprintf("TLS handshake with %s failed: %v", member, hsErr)
	}
	c.tokenMu.Lock()
	rejected := c.rejected
	c.tokenMu.Unlock()
	if rejected && (errors.Is(err, rpctypes.ErrInvalidAuthToken) || errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken) || rpctypes.Error(err) == rpctypes.ErrInvalidAuthToken) {
		return model.ProbeFailureOther, fmt.Sprintf("%s is a learner and did not take the token a voter issued (it joined after it was issued): a voter issues another, which it applies once caught up; asked again next round", member)
	}
	if why := authRefusal(err); why != "" {
		return model.ProbeFailureCredentials, fmt.Sprintf("%s refused %s: %s", member, call, why)
	}
	if code := status.Code(err); code == codes.Unauthenticated || code == codes.PermissionDenied {
		return model.ProbeFailureCredentials, fmt.Sprintf("%s refused %s: %s", member, call, grpcDesc(err))
	}
	if fwdErr != nil {
		return model.ProbeFailureConnect, fmt.Sprintf("could not reach %s: %v", member, fwdErr)
	}
	deadline := errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded ||
		errors.Is(err, context.DeadlineExceeded)
	var ae *authError
	if errors.As(err, &ae) {
		switch {
		case errors.Is(err, rpctypes.ErrGRPCNotSupportedForLearner) || rpctypes.ErrorDesc(ae.err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner):
			return model.ProbeFailureOther, fmt.Sprintf("%s is a learner: with auth enabled it answers nothing without a token, issues none itself, and no voter issued one within the probe to present to it (see the others' member list)", member)
		case deadline && connected:
			return model.ProbeFailureTimeout, fmt.Sprintf("%s answered, but issued no auth token within %s: etcd issues tokens through its log, which needs a quorum", member, took)
		}
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled) && !deadline:
		return model.ProbeFailureOther, fmt.Sprintf("probe of %s cancelled after %s", member, took)
	case deadline && !connected && dials == 0:
		return model.ProbeFailureTimeout, fmt.Sprintf("deadline exceeded after %s before dialing %s", took, member)
	case deadline && !connected && dialErr != nil:
		return model.ProbeFailureConnect, fmt.Sprintf("deadline exceeded after %s dialing %s: %v", took, member, dialErr)
	case deadline && !connected:
		return model.ProbeFailureTimeout, fmt.Sprintf("deadline exceeded after %s dialing %s", took, member)
	case deadline && dials > 1:
		// Connections were accepted and then dropped: the member is up
		// but the two sides do not understand each other.
		msg := fmt.Sprintf("deadline exceeded after %s waiting for %s to answer %s: %d connections were accepted and then dropped", took, member, call, dials)
		switch {
		case hsErr != nil:
			msg += fmt.Sprintf("; last TLS handshake error: %v", hsErr)
		case !c.hasTLS:
			msg += "; no TLS credentials are configured: does the member require TLS?"
		}
		if d := grpcDesc(err); d != "" && d != context.DeadlineExceeded.Error() {
			msg += "; " + d
		}
		return model.ProbeFailureTimeout, msg
	case deadline:
		return model.ProbeFailureTimeout, fmt.Sprintf("deadline exceeded after %s waiting for %s to answer %s (connected, no reply: is it paused or overloaded?)", took, member, call)
	}
	return model.ProbeFailureOther, fmt.Sprintf("%s: %s: %s", member, call, grpcDesc(err))
}

func grpcDesc(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
