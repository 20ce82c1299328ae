package portforward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	pfconstants "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/transport/websocket"
	streamhttp "k8s.io/streaming/pkg/httpstream"
	streamspdy "k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/hactl-dev/hactl/engine"
)

// Transport selects how a dial upgrades its connection to the API server.
type Transport int

// Transports.
const (
	// TransportAuto tries WebSocket first and falls back to SPDY, as
	// kubectl does.
	TransportAuto Transport = iota
	// TransportWebSocket uses only the WebSocket (SPDY-tunneling)
	// upgrade.
	TransportWebSocket
	// TransportSPDY uses only the SPDY upgrade.
	TransportSPDY
)

func (t Transport) String() string {
	switch t {
	case TransportAuto:
		return "auto"
	case TransportWebSocket:
		return "websocket"
	case TransportSPDY:
		return "spdy"
	}
	return "Transport(" + strconv.Itoa(int(t)) + ")"
}

// Options tune a dialer. The zero value is what kubectl does.
type Options struct {
	Transport Transport
}

// NewDialer returns a DialFunc that port-forwards through the API server
// described by cfg, WebSocket first with SPDY fallback. cfg is copied.
func NewDialer(cfg *rest.Config) (engine.DialFunc, error) {
	return NewDialerWithOptions(cfg, Options{})
}

// NewDialerWithOptions is NewDialer with a choice of transport (to prove
// either path on its own).
func NewDialerWithOptions(cfg *rest.Config, o Options) (engine.DialFunc, error) {
	if cfg == nil {
		return nil, errors.New("port-forward: no REST config")
	}
	switch o.Transport {
	case TransportAuto, TransportWebSocket, TransportSPDY:
	default:
		return nil, fmt.Errorf("port-forward: unknown transport %v", o.Transport)
	}
	cfg = rest.CopyConfig(cfg)
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("port-forward: API server URL: %w", err)
	}
	// Build both transports once so that a broken config (unreadable
	// certificate files, bad exec plugin) fails here, not on every dial.
	if _, _, err := websocket.RoundTripperFor(cfg); err != nil {
		return nil, fmt.Errorf("port-forward: WebSocket transport: %w", err)
	}
	if _, _, err := spdy.RoundTripperFor(cfg); err != nil {
		return nil, fmt.Errorf("port-forward: SPDY transport: %w", err)
	}
	d := &dialer{cfg: cfg, base: base, transport: o.Transport}
	return d.Dial, nil
}

type dialer struct {
	cfg       *rest.Config
	base      *url.URL
	transport Transport
	requestID atomic.Uint64
}

// podURL is the pods/portforward subresource URL of namespace/pod.
func (d *dialer) podURL(namespace, pod string) *url.URL {
	u := *d.base
	u.Path = path.Join("/", d.base.Path, "api", "v1", "namespaces", namespace, "pods", pod, "portforward")
	u.RawPath = ""
	u.RawQuery = ""
	return &u
}

// Dial implements engine.DialFunc.
func (d *dialer) Dial(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	target := addr{namespace: namespace, pod: pod, port: port}
	if namespace == "" || pod == "" || strings.ContainsAny(namespace+pod, "/?#%") {
		return nil, fmt.Errorf("port-forward to %s: invalid namespace or pod name", target)
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("port-forward to %s: invalid port", target)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("port-forward to %s: %w", target, err)
	}

	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := d.open(ctx, target)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			if cause := expired(ctx); cause != nil {
				// The transports turn the context's deadline into
				// socket deadlines, which may fire a moment before
				// the context does: report the cause, not the symptom.
				return nil, fmt.Errorf("port-forward to %s: %w (%v)", target, cause, r.err)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("port-forward to %s: %w", target, r.err)
		}
		return r.conn, nil
	case <-ctx.Done():
		// Stream creation does not take a context: give up now and
		// close whatever the dial produces later.
		go func() {
			if r := <-ch; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("port-forward to %s: %w", target, context.Cause(ctx))
	}
}

// expired returns why ctx is over, also when its deadline has passed but
// its timer has not fired yet; nil while it is live.
func expired(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// open upgrades a connection to the API server and creates the stream
// pair for target's port on it.
func (d *dialer) open(ctx context.Context, target addr) (net.Conn, error) {
	u := d.podURL(target.namespace, target.pod)
	var sd streamhttp.Dialer
	ws := &wsDialer{ctx: ctx, cfg: d.cfg, url: u}
	sp := &spdyDialer{ctx: ctx, cfg: d.cfg, url: u}
	switch d.transport {
	case TransportWebSocket:
		sd = ws
	case TransportSPDY:
		sd = sp
	default:
		sd = portforward.NewFallbackDialerForStreaming(ws, sp, func(err error) bool {
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
		})
	}
	sc, proto, err := sd.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, err
	}
	if proto != portforward.PortForwardProtocolV1Name {
		_ = sc.Close()
		return nil, fmt.Errorf("API server negotiated protocol %q, want %q", proto, portforward.PortForwardProtocolV1Name)
	}

	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(target.port))
	h.Set(corev1.PortForwardRequestIDHeader, strconv.FormatUint(d.requestID.Add(1), 10))
	errStream, err := sc.CreateStream(h)
	if err != nil {
		_ = sc.Close()
		return nil, fmt.Errorf("creating the error stream: %w", err)
	}
	// Nothing is ever written to the error stream.
	_ = errStream.Close()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	dataStream, err := sc.CreateStream(h)
	if err != nil {
		_ = sc.Close()
		return nil, fmt.Errorf("creating the data stream: %w", err)
	}
	return newConn(sc, errStream, dataStream, target), nil
}

// wsDialer upgrades to a WebSocket that tunnels SPDY, with the request
// bound to ctx (client-go's own tunneling dialer uses a background
// context).
type wsDialer struct {
	ctx context.Context
	cfg *rest.Config
	url *url.URL
}

func (d *wsDialer) Dial(protocols ...string) (streamhttp.Connection, string, error) {
	rt, holder, err := websocket.RoundTripperFor(d.cfg)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(d.ctx, http.MethodGet, d.url.String(), nil)
	if err != nil {
		return nil, "", err
	}
	tunneled := make([]string, len(protocols))
	for i, p := range protocols {
		tunneled[i] = pfconstants.WebsocketsSPDYTunnelingPrefix + p
	}
	wsConn, err := websocket.Negotiate(rt, holder, req, tunneled...)
	if err != nil {
		return nil, "", err
	}
	if wsConn == nil {
		return nil, "", errors.New("WebSocket upgrade returned no connection")
	}
	proto := strings.TrimPrefix(wsConn.Subprotocol(), pfconstants.WebsocketsSPDYTunnelingPrefix)
	tc := portforward.NewTunnelingConnection("hactl", wsConn)
	sc, err := streamspdy.NewClientConnectionWithPings(tc, portforward.PingPeriod)
	if err != nil {
		_ = tc.Close()
		return nil, "", err
	}
	return sc, proto, nil
}

// spdyDialer upgrades to SPDY, with the request bound to ctx.
type spdyDialer struct {
	ctx context.Context
	cfg *rest.Config
	url *url.URL
}

func (d *spdyDialer) Dial(protocols ...string) (streamhttp.Connection, string, error) {
	rt, upgrader, err := spdy.RoundTripperFor(d.cfg)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(d.ctx, http.MethodPost, d.url.String(), nil)
	if err != nil {
		return nil, "", err
	}
	return spdy.NegotiateStreaming(upgrader, &http.Client{Transport: rt}, req, protocols...)
}

// addr names the far end of a forwarded connection.
type addr struct {
	namespace, pod string
	port           int
}

func (a addr) Network() string { return "portforward" }
func (a addr) String() string {
	return a.namespace + "/" + a.pod + ":" + strconv.Itoa(a.port)
}
