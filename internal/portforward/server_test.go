package portforward

// A stand-in for the API server's pods/portforward endpoint, built from the
// same server-side library code the Kubernetes components use
// (k8s.io/streaming's SPDY upgrader and handshake, client-go's tunneling
// connection over gorilla/websocket), forwarding each stream pair to a real
// TCP listener. It lets the dialer be tested without a cluster; the
// end-to-end proof against kube-apiserver and kwok lives in the sandbox
// tests.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	pfconstants "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/client-go/tools/portforward"
	streamhttp "k8s.io/streaming/pkg/httpstream"
	streamspdy "k8s.io/streaming/pkg/httpstream/spdy"
)

type pfServer struct {
	t       *testing.T
	allowWS bool
	// hang, when non-nil, makes every request block until it is closed.
	hang chan struct{}
	// resolve maps a pod's port to a real address to dial.
	resolve func(namespace, pod string, port int) (string, error)

	mu      sync.Mutex
	used    []string      // "websocket" or "spdy", per upgraded request
	headers []http.Header // every stream's headers
	open    int           // upgraded connections not yet closed
}

func (s *pfServer) record(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func (s *pfServer) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

func (s *pfServer) transports() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.used...)
}

func (s *pfServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.hang != nil {
		select {
		case <-s.hang:
		case <-r.Context().Done():
		}
		http.Error(w, "gave up", http.StatusServiceUnavailable)
		return
	}
	// /api/v1/namespaces/{ns}/pods/{pod}/portforward
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 7 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" || parts[6] != "portforward" {
		http.NotFound(w, r)
		return
	}
	ns, pod := parts[3], parts[5]

	var sc streamhttp.Connection
	if gwebsocket.IsWebSocketUpgrade(r) {
		if !s.allowWS {
			http.Error(w, "WebSocket upgrades are not supported here", http.StatusBadRequest)
			return
		}
		up := gwebsocket.Upgrader{Subprotocols: []string{pfconstants.WebsocketsSPDYTunnelingPortForwardV1}}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		sc, err = streamspdy.NewServerConnection(portforward.NewTunnelingConnection("test-server", ws), s.streams(ns, pod))
		if err != nil {
			s.t.Errorf("server SPDY over WebSocket: %v", err)
			return
		}
		s.record(func() { s.used = append(s.used, "websocket") })
	} else {
		if r.Method != http.MethodPost {
			http.Error(w, "want POST", http.StatusMethodNotAllowed)
			return
		}
		if _, err := streamhttp.Handshake(r, w, []string{portforward.PortForwardProtocolV1Name}); err != nil {
			return
		}
		sc = streamspdy.NewResponseUpgrader().UpgradeResponse(w, r, s.streams(ns, pod))
		if sc == nil {
			return
		}
		s.record(func() { s.used = append(s.used, "spdy") })
	}
	s.record(func() { s.open++ })
	<-sc.CloseChan()
	s.record(func() { s.open-- })
}

type streamPair struct{ errStream, dataStream streamhttp.Stream }

// streams pairs the error and data streams of each request ID, as the
// kubelet does, and forwards each complete pair.
func (s *pfServer) streams(ns, pod string) streamhttp.NewStreamHandler {
	var mu sync.Mutex
	pairs := map[string]*streamPair{}
	return func(st streamhttp.Stream, replySent <-chan struct{}) error {
		h := st.Headers()
		s.record(func() { s.headers = append(s.headers, h.Clone()) })
		id := h.Get(corev1.PortForwardRequestIDHeader)
		mu.Lock()
		p := pairs[id]
		if p == nil {
			p = &streamPair{}
			pairs[id] = p
		}
		switch h.Get(corev1.StreamType) {
		case corev1.StreamTypeError:
			p.errStream = st
		case corev1.StreamTypeData:
			p.dataStream = st
		default:
			mu.Unlock()
			return fmt.Errorf("unknown stream type %q", h.Get(corev1.StreamType))
		}
		complete := p.errStream != nil && p.dataStream != nil
		if complete {
			delete(pairs, id)
		}
		mu.Unlock()
		if complete {
			port, _ := strconv.Atoi(h.Get(corev1.PortHeader))
			go s.forward(ns, pod, port, *p, replySent)
		}
		return nil
	}
}

func (s *pfServer) forward(ns, pod string, port int, p streamPair, replySent <-chan struct{}) {
	<-replySent
	fail := func(err error) {
		_, _ = fmt.Fprintf(p.errStream, "error forwarding port %d to pod %s/%s: %v", port, ns, pod, err)
		_ = p.errStream.Close()
		_ = p.dataStream.Reset()
	}
	addr, err := s.resolve(ns, pod, port)
	if err != nil {
		fail(err)
		return
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		fail(err)
		return
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(c, p.dataStream) // client to pod
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(p.dataStream, c) // pod to client
	_ = p.dataStream.Close()
	<-done
	_ = p.errStream.Close()
}

// echoServer is a TCP listener that echoes every connection, closed when
// the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			})
		}
	})
	return l.Addr().String()
}
