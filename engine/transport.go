package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/hactl-dev/hactl/model"
)

// The pieces below are what every engine's client needs around a DialFunc:
// the TLS configuration from Credentials, a host name for URLs that are
// never resolved, and a record of how far each connection got, so that a
// failed probe is explained from typed errors rather than from text.

// TLSConfig turns Credentials into a client TLS configuration for target
// t. Errors name what is wrong, never the material.
func TLSConfig(cr *Credentials, t Target) (*tls.Config, error) {
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
	sn := ServerName(cr, t)
	if !validHost(sn) {
		return nil, fmt.Errorf("server name %q is not a host name", sn)
	}
	tc.ServerName = sn
	return tc, nil
}

// ServerName is the name a member's serving certificate must carry:
// Credentials.ServerName (when cr is not nil), else Target.ServerName,
// else the pod's name.
func ServerName(cr *Credentials, t Target) string {
	switch {
	case cr != nil && cr.ServerName != "":
		return cr.ServerName
	case t.ServerName != "":
		return t.ServerName
	default:
		return t.Pod
	}
}

// PlaceholderHost is a host:port for URLs a client builds but never
// resolves (the DialFunc decides where a connection goes): the server name
// with TLS, the member's name otherwise, "member" when neither is a host
// name.
func PlaceholderHost(t Target, cr *Credentials) string {
	host := t.Member
	if cr != nil {
		host = ServerName(cr, t)
	}
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

// DialState remembers how one member's connection attempts went:
// "dialing" versus "connected, no reply", a refused dial, a rejected
// certificate, a tunnel that could not reach the pod. Safe for concurrent
// use.
type DialState struct {
	mu           sync.Mutex
	dials        int
	connected    bool
	lastDialErr  error
	handshakeErr error
	forwardErr   error
	// cert is the serving certificate of the last handshake; kept across
	// Restart, as the connection it came with is.
	cert *model.CertFacts
}

// DialSnapshot is a DialState at one moment.
type DialSnapshot struct {
	// Dials counts the dials started; Connected says one succeeded.
	Dials     int
	Connected bool
	// DialErr is the last dial's failure (not a deadline: that is the
	// deadline's story), HandshakeErr a TLS failure, ForwardErr the
	// tunnel's (ErrForward).
	DialErr, HandshakeErr, ForwardErr error
	// Cert is the serving certificate the last TLS handshake saw (nil
	// without one); a copy.
	Cert *model.CertFacts
}

// Restart forgets the dials and failures recorded so far (a connection
// that is up stays up): a client kept across probe rounds explains a
// round's failure by that round's dials alone.
func (s *DialState) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dials, s.lastDialErr, s.handshakeErr, s.forwardErr = 0, nil, nil, nil
}

// DialStarted records a dial beginning.
func (s *DialState) DialStarted() {
	s.mu.Lock()
	s.dials++
	s.mu.Unlock()
}

// DialDone records how a dial ended.
func (s *DialState) DialDone(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.connected = true
	case errors.Is(err, ErrForward):
		s.forwardErr = err
	case IsGaveUp(err):
	default:
		s.lastDialErr = err
	}
}

// HandshakeDone records a TLS handshake's failure (nil: nothing).
func (s *DialState) HandshakeDone(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.handshakeErr = err
	}
}

// Handshook records a TLS handshake with the member at port: its failure
// (HandshakeDone) and the serving certificate it saw (CertOf).
func (s *DialState) Handshook(port int, state *tls.ConnectionState, err error) {
	s.HandshakeDone(err)
	if c := CertOf(port, state, err); c != nil {
		s.mu.Lock()
		s.cert = c
		s.mu.Unlock()
	}
}

// SetCert records c as the serving certificate the member presents now
// (read on a connection of its own, see ReadCert).
func (s *DialState) SetCert(c *model.CertFacts) {
	s.mu.Lock()
	s.cert = c
	s.mu.Unlock()
}

// ReadCert reads the serving certificate of t's pod at port with a TLS
// handshake alone (nothing is sent), checked as the probe's own (cr, t's
// server name): verified when the chain holds, else as the failed
// verification carries it. Without cr (a plaintext client port) the
// certificate is read unchecked, for its dates only. Nil when the port
// could not be reached or served none.
func ReadCert(ctx context.Context, dial DialFunc, t Target, cr *Credentials, port int) *model.CertFacts {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: ServerName(nil, t), InsecureSkipVerify: true} //nolint:gosec // read for its dates only, nothing is sent
	if cr != nil {
		var err error
		if tc, err = TLSConfig(cr, t); err != nil {
			return nil
		}
	}
	var seen *model.CertFacts
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		// Called once the chain verified (or, unchecked, at once),
		// before the member may still refuse the client certificate.
		seen = CertOf(port, &cs, nil)
		if cr == nil && seen != nil {
			seen.Verified = false
		}
		return nil
	}
	raw, err := dial(ctx, t.Namespace, t.Pod, port)
	if err != nil {
		return nil
	}
	defer raw.Close()
	conn := tls.Client(raw, tc)
	err = conn.HandshakeContext(ctx)
	if seen != nil {
		return seen
	}
	return CertOf(port, nil, err)
}

// Certs lists the certificates of cs that are not nil.
func Certs(cs ...*model.CertFacts) []model.CertFacts {
	var out []model.CertFacts
	for _, c := range cs {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// CertOf is the serving certificate a member presented at port in a TLS
// handshake: verified, from the state of a handshake that succeeded, or
// not, from the verification error of one that failed on it (an expired
// certificate). Nil when neither holds one.
func CertOf(port int, state *tls.ConnectionState, err error) *model.CertFacts {
	var leaf *x509.Certificate
	verified := false
	var ve *tls.CertificateVerificationError
	switch {
	case err == nil && state != nil && len(state.PeerCertificates) > 0:
		leaf, verified = state.PeerCertificates[0], len(state.VerifiedChains) > 0
	case errors.As(err, &ve) && len(ve.UnverifiedCertificates) > 0:
		leaf = ve.UnverifiedCertificates[0]
	}
	if leaf == nil {
		return nil
	}
	// The names come from the member, even unverified: no control
	// characters reach a terminal.
	names := make([]string, 0, len(leaf.DNSNames))
	for _, n := range leaf.DNSNames {
		names = append(names, Printable(n))
	}
	return &model.CertFacts{Subject: Printable(leaf.Subject.String()), Issuer: Printable(leaf.Issuer.String()), DNSNames: names,
		NotBefore: leaf.NotBefore.UTC(), NotAfter: leaf.NotAfter.UTC(), Verified: verified, Port: port}
}

// Printable is s without control characters: text a member sent (a
// document's value, an error body) never drives the terminal it is
// printed on.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// ConnError records what a connection's Read or Write failure says about
// the transport (the tunnel could not reach the pod) or the member (it
// rejected the client certificate after the handshake, as TLS 1.3 servers
// do).
func (s *DialState) ConnError(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrForward):
		s.mu.Lock()
		s.forwardErr = err
		s.mu.Unlock()
	case IsTLSAlert(err):
		s.HandshakeDone(err)
	}
}

// Snapshot returns the state now.
func (s *DialState) Snapshot() DialSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cert *model.CertFacts
	if s.cert != nil {
		c := *s.cert
		cert = &c
	}
	return DialSnapshot{s.dials, s.connected, s.lastDialErr, s.handshakeErr, s.forwardErr, cert}
}

// Observe wraps c so that its Read and Write failures are recorded.
func (s *DialState) Observe(c net.Conn) net.Conn { return observedConn{Conn: c, state: s} }

type observedConn struct {
	net.Conn
	state *DialState
}

func (c observedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.state.ConnError(err)
	return n, err
}

func (c observedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.state.ConnError(err)
	return n, err
}

// IsGaveUp reports whether a dial or request ended because its context or
// a deadline did.
func IsGaveUp(err error) bool {
	var ne net.Error
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// IsTLSAlert reports whether err is a TLS alert: crypto/tls reports an
// alert received from the peer as a *net.OpError with Op "remote error",
// and one it raised itself as a tls.AlertError.
func IsTLSAlert(err error) bool {
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// IsCredentialsError reports whether a handshake failed because of
// certificates or a protocol mismatch, rather than a timeout or a dropped
// connection.
func IsCredentialsError(err error) bool {
	if IsTLSAlert(err) {
		return true
	}
	var (
		verify    *tls.CertificateVerificationError
		header    tls.RecordHeaderError
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		host      x509.HostnameError
	)
	return errors.As(err, &verify) || errors.As(err, &header) ||
		errors.As(err, &unknownCA) || errors.As(err, &invalid) || errors.As(err, &host)
}

// UnwrapURL drops net/http's *url.Error wrapper, whose text repeats the
// placeholder URL a member's client builds (the DialFunc decides where a
// connection goes), leaving the error that says what happened.
func UnwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
