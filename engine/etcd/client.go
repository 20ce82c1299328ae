package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

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
	target  engine.Target
	cli     *clientv3.Client
	state   *dialState
	hasTLS  bool
	timeout time.Duration
}

// Open builds a client for the member t. It does not block: the first call
// dials. ctx bounds the client's whole life (Close it anyway); o.Timeout
// bounds each connection attempt; o.Dial is required; o.Credentials, when
// set, switch the client to TLS.
func Open(ctx context.Context, t engine.Target, o engine.ProbeOptions) (*Client, error) {
	o = o.WithDefaults()
	if o.Dial == nil {
		return nil, errors.New("no dialer configured")
	}
	if t.Pod == "" || t.Port <= 0 {
		return nil, fmt.Errorf("target %q has no pod or port", t.Member)
	}
	if t.Member == "" {
		t.Member = t.Pod
	}
	st := &dialState{}
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if o.Credentials != nil {
		tc, err := tlsConfig(o.Credentials, t)
		if err != nil {
			return nil, &credentialsError{err: err}
		}
		creds = credentials.NewTLS(tc)
	}
	creds = observedCreds{TransportCredentials: creds, state: st}

	c := &Client{target: t, state: st, hasTLS: o.Credentials != nil, timeout: o.Timeout}
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
		st.dialStarted()
		conn, err := dial(dctx, t.Namespace, t.Pod, t.Port)
		st.dialDone(err)
		return conn, err
	}

	cfg := clientv3.Config{
		// A placeholder: the context dialer ignores it. The scheme keeps
		// clientv3 from substituting credentials of its own; ours are
		// set below and win because DialOptions are applied last.
		Endpoints:   []string{"http://" + placeholderHost(t)},
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
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %s: %w", t.Member, err)
	}
	c.cli = cli
	return c, nil
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

func placeholderHost(t engine.Target) string {
	host := t.Member
	if host == "" || !validHost(host) {
		host = "member"
	}
	return net.JoinHostPort(host, strconv.Itoa(t.Port))
}

func validHost(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// tlsConfig turns Credentials into a client TLS config. Errors name what
// is wrong, never the material.
func tlsConfig(cr *engine.Credentials, t engine.Target) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case len(cr.CertPEM) > 0 && len(cr.KeyPEM) > 0:
		pair, err := tls.X509KeyPair(cr.CertPEM, cr.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate and key do not load: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	case len(cr.CertPEM) > 0 || len(cr.KeyPEM) > 0:
		return nil, errors.New("client certificate and key must be given together")
	}
	if len(cr.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cr.CAPEM) {
			return nil, errors.New("CA bundle holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	switch {
	case cr.ServerName != "":
		tc.ServerName = cr.ServerName
	case t.ServerName != "":
		tc.ServerName = t.ServerName
	default:
		tc.ServerName = t.Pod
	}
	return tc, nil
}

// credentialsError marks a failure caused by the client's TLS material or
// the member rejecting it.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "TLS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// dialState remembers how the connection attempts went, so that a
// deadline can be explained ("dialing" versus "connected, no reply").
type dialState struct {
	mu           sync.Mutex
	dials        int
	connected    bool
	lastDialErr  error
	handshakeErr error
}

func (s *dialState) dialStarted() {
	s.mu.Lock()
	s.dials++
	s.mu.Unlock()
}

func (s *dialState) dialDone(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastDialErr = err
		return
	}
	s.connected = true
}

func (s *dialState) handshakeDone(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.handshakeErr = err
	}
}

func (s *dialState) snapshot() (dials int, connected bool, lastDialErr, handshakeErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials, s.connected, s.lastDialErr, s.handshakeErr
}

// observedCreds records handshake failures so that a rejected certificate
// is reported as a credentials problem from a typed error, not from text.
type observedCreds struct {
	credentials.TransportCredentials
	state *dialState
}

func (c observedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	c.state.handshakeDone(err)
	return conn, info, err
}

func (c observedCreds) Clone() credentials.TransportCredentials {
	return observedCreds{TransportCredentials: c.TransportCredentials.Clone(), state: c.state}
}
