package etcd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"

	"github.com/hactl-dev/hactl/engine"
)

func init() {
	// gRPC's default logger writes errors to stderr from background
	// goroutines (failed reconnects to a paused member, for instance). It
	// is process-wide, so it is set once here, before any client exists,
	// rather than racing with live connections later.
	if os.Getenv("GRPC_GO_LOG_SEVERITY_LEVEL") == "" && os.Getenv("ETCD_CLIENT_DEBUG") == "" {
		grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	}
}

// Client talks to exactly one etcd member through a DialFunc. It never
// learns or dials any other endpoint. Create it with Open and Close it when
// done; it is safe for concurrent use.
type Client struct {
	target engine.Target
	cli    *clientv3.Client
	state  *engine.DialState
	hasTLS bool
	// certRead is when the client port's certificate was last read: a
	// kept connection handshook once (see probeKept).
	certRead time.Time

	// keepPeers is set on a client kept from round to round
	// (engine.Conns): it remembers the member list with the state it was
	// read at, and asks again only when that state moved (Facts).
	keepPeers bool
	mu        sync.Mutex
	known     *knownPeers

	// auth is the user and password of a cluster with auth enabled (nil
	// without); token is the member's token for them, asked once and
	// kept while the member takes it (tokenMu: one request at a time).
	auth    *engine.BasicAuth
	tokenMu sync.Mutex
	token   string
	// borrowed: the token is one a voter issued (this member is a
	// learner); rejected: the member did not take such a token.
	borrowed, rejected bool
}

// Open builds a client for the member t. It does not block: the first call
// dials. ctx bounds the client's whole life (Close it anyway); o.Timeout
// bounds each connection attempt; o.Dial is required; o.Credentials, when
// set, switch the client to TLS; o.Auth, when set, authenticates it (a
// cluster with auth enabled).
func Open(ctx context.Context, t engine.Target, o engine.ProbeOptions) (*Client, error) {
	o = o.WithDefaults()
	if o.Dial == nil {
		return nil, errors.New("no dialer configured")
	}
	if t.Pod == "" || t.Port <= 0 {
		return nil, errors.New("no pod or port given")
	}
	if t.Member == "" {
		t.Member = t.Pod
	}
	st := &engine.DialState{}
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if o.Credentials != nil {
		tc, err := engine.TLSConfig(o.Credentials, t)
		if err != nil {
			return nil, &credentialsError{err: err}
		}
		creds = credentials.NewTLS(tc)
	}
	creds = observedCreds{TransportCredentials: creds, state: st, port: t.Port}

	c := &Client{target: t, state: st, hasTLS: o.Credentials != nil, certRead: time.Now(), auth: o.Auth}
	dial := o.Dial
	contextDialer := func(gctx context.Context, _ string) (net.Conn, error) {
		// gRPC's context ends when the connection attempt is abandoned
		// or the client closes; ctx carries the caller's deadline. The
		// dial obeys both, and sees ctx's deadline.
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if d, ok := gctx.Deadline(); ok {
			var cancelD context.CancelFunc
			dctx, cancelD = context.WithDeadline(dctx, d)
			defer cancelD()
		}
		stop := context.AfterFunc(gctx, cancel)
		defer stop()
		st.DialStarted()
		conn, err := dial(dctx, t.Namespace, t.Pod, t.Port)
		st.DialDone(err)
		return conn, err
	}

	cfg := clientv3.Config{
		// A placeholder: the context dialer ignores the address. Its
		// host is what gRPC checks the serving certificate against
		// (gRPC overrides tls.Config.ServerName with it). The scheme
		// keeps clientv3 from substituting credentials of its own; ours
		// are set below and win because DialOptions are applied last.
		Endpoints:   []string{"http://" + engine.PlaceholderHost(t, o.Credentials)},
		DialTimeout: o.Timeout,
		// AutoSyncInterval stays zero: never follow advertised URLs.
		AutoSyncInterval: 0,
		Context:          ctx,
		Logger:           zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(contextDialer),
			grpc.WithTransportCredentials(creds),
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff: backoff.Config{
					BaseDelay:  100 * time.Millisecond,
					Multiplier: 1.6,
					Jitter:     0.2,
					MaxDelay:   time.Second,
				},
				MinConnectTimeout: o.Timeout,
			}),
		},
	}
	// With auth enabled the client's calls ask for a token themselves
	// (authed), not clientv3 at New: its request would block New until
	// the member answered and a quorum issued the token, and its failure
	// would say nothing of the connection.
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", t.Member, err)
	}
	c.cli = cli
	return c, nil
}

// authed is ctx carrying the client's auth token, asked of the member
// first when the client has none; ctx as it is without auth. Etcd issues
// a token through its log: a member without quorum issues none, and a
// learner refuses the request.
func (c *Client) authed(ctx context.Context) (context.Context, error) {
	if c.auth == nil {
		return ctx, nil
	}
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	key := tokenKey(c.target, c.auth)
	if c.token != "" && !c.borrowed && shared.isStale(key, c.token) {
		// A learner did not take this token (it joined after it was
		// issued): issue another, which the learner applies too.
		c.token = ""
	}
	if c.token == "" {
		resp, err := c.cli.Authenticate(ctx, c.auth.Username, c.auth.Password)
		switch {
		case err == nil:
			c.token, c.borrowed, c.rejected = resp.Token, false, false
			shared.put(key, c.token)
		case isLearnerRefusal(err):
			// A learner refuses to issue a token; the token a voter
			// issued was applied on every member through the log, the
			// learner too: it takes that one, waiting for it at most
			// half of what is left (the voters are asked meanwhile).
			wctx, cancel := halfLeft(ctx)
			tok := shared.wait(wctx, key)
			cancel()
			if tok == "" {
				return ctx, err
			}
			c.token, c.borrowed, c.rejected = tok, true, false
		default:
			return ctx, err
		}
	}
	return metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, c.token), nil
}

// isLearnerRefusal: err is a learner refusing a request it does not
// serve (Authenticate among them).
func isLearnerRefusal(err error) bool {
	return errors.Is(err, rpctypes.ErrGRPCNotSupportedForLearner) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner)
}

// tokenKey is the key of the tokens cluster t.Cluster's members issue to
// this user and password: a digest, never the password itself.
func tokenKey(t engine.Target, a *engine.BasicAuth) string {
	h := sha256.Sum256([]byte(t.Namespace + "\x00" + t.Cluster + "\x00" + a.Username + "\x00" + a.Password))
	return hex.EncodeToString(h[:16])
}

// shared are the auth tokens voters issued, by tokenKey, for learners
// to present (a learner issues none), and the tokens a learner did not
// take (stale), which voters then replace.
var shared = &tokenShare{tokens: map[string]string{}, stale: map[string]string{}}

type tokenShare struct {
	mu            sync.Mutex
	tokens, stale map[string]string
}

func (s *tokenShare) put(key, tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[key] = tok
}

// drop forgets tok under key, if it is still the one shared (a voter no
// longer took it).
func (s *tokenShare) drop(key, tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens[key] == tok {
		delete(s.tokens, key)
	}
}

// reject marks tok under key as one a learner did not take: voters
// holding it issue another.
func (s *tokenShare) reject(key, tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stale[key] = tok
	if s.tokens[key] == tok {
		delete(s.tokens, key)
	}
}

func (s *tokenShare) isStale(key, tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale[key] == tok
}

// halfLeft is ctx bounded to half the time it has left (ctx itself,
// cancellable, when it has no deadline).
func halfLeft(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(d)/2)
}

// wait is the token shared under key, one a learner took or was not yet
// offered, waiting for one until ctx ends (the voters are asked at the
// same time); "" when none came.
func (s *tokenShare) wait(ctx context.Context, key string) string {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		tok := s.tokens[key]
		if tok == s.stale[key] {
			tok = ""
		}
		s.mu.Unlock()
		if tok != "" {
			return tok
		}
		select {
		case <-ctx.Done():
			return ""
		case <-tick.C:
		}
	}
}

// checked forgets the token when err says the member no longer takes it
// (expired, or the member restarted): the next call asks for another.
// It returns err.
func (c *Client) checked(err error) error {
	if err != nil && c.auth != nil && (errors.Is(err, rpctypes.ErrInvalidAuthToken) || errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken) || rpctypes.Error(err) == rpctypes.ErrInvalidAuthToken) {
		c.tokenMu.Lock()
		if key := tokenKey(c.target, c.auth); c.borrowed {
			shared.reject(key, c.token)
			c.rejected = true
		} else {
			shared.drop(key, c.token)
		}
		c.token = ""
		c.tokenMu.Unlock()
	}
	return err
}

// call runs f with the client's auth token (authed), forgetting the
// token when the member no longer takes it (checked).
func call[T any](c *Client, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	var zero T
	actx, err := c.authed(ctx)
	if err != nil {
		return zero, err
	}
	v, err := f(actx)
	return v, c.checked(err)
}

// Target is the member this client talks to.
func (c *Client) Target() engine.Target { return c.target }

// Close releases the client and its connection.
func (c *Client) Close() error {
	err := c.cli.Close()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// credentialsError marks a failure caused by the client's TLS material or
// the member rejecting it.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "TLS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// observedCreds records handshake failures so that a rejected certificate
// is reported as a credentials problem from a typed error, not from text.
type observedCreds struct {
	credentials.TransportCredentials
	state *engine.DialState
	port  int
}

func (c observedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if ti, ok := info.(credentials.TLSInfo); ok && err == nil {
		c.state.Handshook(c.port, &ti.State, nil)
	} else {
		c.state.Handshook(c.port, nil, err)
	}
	if err != nil {
		return conn, info, err
	}
	return c.state.Observe(conn), info, nil
}

func (c observedCreds) Clone() credentials.TransportCredentials {
	return observedCreds{TransportCredentials: c.TransportCredentials.Clone(), state: c.state, port: c.port}
}

// KV is the member's key-value API through the same single connection
// (serializable reads answer from this member's own store). For tools and
// tests; hactl's own probes never read keys.
func (c *Client) KV() clientv3.KV { return c.cli }
