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
	target engine.Target
	cli    *clientv3.Client
	state  *dialState
	hasTLS bool
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
		return nil, errors.New("no pod or port given")
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

	c := &Client{target: t, state: st, hasTLS: o.Credentials != nil}
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
		// A placeholder: the context dialer ignores the address. Its
		// host is what gRPC checks the serving certificate against
		// (gRPC overrides tls.Config.ServerName with it). The scheme
		// keeps clientv3 from substituting credentials of its own; ours
		// are set below and win because DialOptions are applied last.
		Endpoints:   []string{"http://" + placeholderHost(t, o.Credentials)},
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

func placeholderHost(t engine.Target, cr *engine.Credentials) string {
	host := t.Member
	if cr != nil {
		host = serverName(cr, t)
	}
	if host == "" || !validHost(host) {
		host = "member"
	}
	return net.JoinHostPort(host, strconv.Itoa(t.Port))
}

// serverName is the name a member's serving certificate must carry.
func serverName(cr *engine.Credentials, t engine.Target) string {
	switch {
	case cr.ServerName != "":
		return cr.ServerName
	case t.ServerName != "":
		return t.ServerName
	default:
		return t.Pod
	}
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
	if sn := serverName(cr, t); validHost(sn) {
		tc.ServerName = sn
	} else {
		return nil, fmt.Errorf("server name %q is not a host name", sn)
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
	forwardErr   error
}

// connError records what a connection's Read or Write failure says about
// the transport (the tunnel could not reach the pod) or the member (it
// rejected our certificate after the handshake).
func (s *dialState) connError(err error) {
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrForward):
		s.mu.Lock()
		s.forwardErr = err
		s.mu.Unlock()
	case isTLSAlert(err):
		s.handshakeDone(err)
	}
}

func (s *dialState) dialStarted() {
	s.mu.Lock()
	s.dials++
	s.mu.Unlock()
}

func (s *dialState) dialDone(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.connected = true
	case isGaveUp(err):
		// The dial ran out of time: that is the deadline's story, not
		// a refused connection.
	default:
		s.lastDialErr = err
	}
}

// isGaveUp reports whether a dial ended because its context or a
// deadline did.
func isGaveUp(err error) bool {
	var ne net.Error
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

func (s *dialState) handshakeDone(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.handshakeErr = err
	}
}

func (s *dialState) snapshot() (dials int, connected bool, lastDialErr, handshakeErr, forwardErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials, s.connected, s.lastDialErr, s.handshakeErr, s.forwardErr
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
	if err != nil {
		return conn, info, err
	}
	return observedConn{Conn: conn, state: c.state}, info, nil
}

// observedConn records a TLS alert that arrives after the handshake: with
// TLS 1.3 the server checks the client certificate only after the client
// considers the handshake done, so a rejected certificate surfaces on the
// first read.
type observedConn struct {
	net.Conn
	state *dialState
}

func (c observedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.state.connError(err)
	return n, err
}

func (c observedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.state.connError(err)
	return n, err
}

// isTLSAlert reports whether err is a TLS alert: crypto/tls reports an
// alert received from the peer as a *net.OpError with Op "remote error",
// and one it raised itself as a tls.AlertError.
func isTLSAlert(err error) bool {
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

func (c observedCreds) Clone() credentials.TransportCredentials {
	return observedCreds{TransportCredentials: c.TransportCredentials.Clone(), state: c.state}
}

// KV is the member's key-value API through the same single connection
// (serializable reads answer from this member's own store). For tools and
// tests; hactl's own probes never read keys.
func (c *Client) KV() clientv3.KV { return c.cli }
