// Package egress is the sandbox's stand-in for the API server's way into
// the cluster network: an HTTP CONNECT proxy that kube-apiserver uses for
// its "cluster" egress (--egress-selector-config-file, as
// apiserver.k8s.io/v1beta1 EgressSelectorConfiguration with proxyProtocol
// HTTPConnect, as a Konnectivity server would serve it).
//
// The API server dials through the "cluster" egress for the pod, service
// and node proxy subresources (GET /api/v1/namespaces/NS/pods/POD:PORT/proxy/...)
// and for its connections to kubelets (logs, exec, port-forward). The
// sandbox's pod IPs (10.244.b.n) are not routable: the proxy maps a pod
// IP's port to the member's real address (127.b.1.n, see runner.Addresses)
// and connects every other target (kwok's kubelet servers on 127.0.0.1)
// as asked.
package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/connserve"
)

// PodCIDRPrefix is the sandbox's pod IPs' prefix (10.244.b.n).
const PodCIDRPrefix = "10.244."

// Resolve maps a CONNECT target (host, port) to the address to dial; ok
// false refuses it.
type Resolve func(host string, port int) (addr string, ok bool)

// BlockResolver maps pod IPs of block b (10.244.b.n) to the member's
// address 127.b.1.n, refuses pod IPs of other blocks (another sandbox's,
// or none) and passes every other target through unchanged.
func BlockResolver(b int) Resolve {
	return func(host string, port int) (string, bool) {
		hp := net.JoinHostPort(host, strconv.Itoa(port))
		if !strings.HasPrefix(host, PodCIDRPrefix) {
			return hp, true
		}
		var bb, n int
		if _, err := fmt.Sscanf(host, "10.244.%d.%d", &bb, &n); err != nil || fmt.Sprintf("10.244.%d.%d", bb, n) != host {
			return "", false
		}
		if bb != b || n < 1 || n > 254 {
			return "", false
		}
		return net.JoinHostPort(fmt.Sprintf("127.%d.1.%d", b, n), strconv.Itoa(port)), true
	}
}

// Proxy is a running HTTP CONNECT proxy.
type Proxy struct {
	*connserve.Server
	resolve Resolve
	logf    func(string, ...any)
}

// Start listens on network ("unix" or "tcp") at addr.
func Start(network, addr string, resolve Resolve, logf func(string, ...any)) (*Proxy, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if network == "unix" {
		_ = os.Remove(addr)
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{resolve: resolve, logf: logf}
	p.Server = connserve.Serve(ln, p.handle)
	return p, nil
}

func (p *Proxy) handle(down net.Conn) {
	defer down.Close()
	_ = down.SetDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(down)
	req, err := http.ReadRequest(br)
	if err != nil {
		p.logf("egress proxy: reading the request: %v", err)
		return
	}
	if req.Method != http.MethodConnect {
		answer(down, http.StatusMethodNotAllowed)
		p.logf("egress proxy: %s %s refused: only CONNECT", req.Method, req.RequestURI)
		return
	}
	target := req.RequestURI
	if target == "" {
		target = req.Host
	}
	host, ps, err := net.SplitHostPort(target)
	port, perr := strconv.Atoi(ps)
	if err != nil || perr != nil {
		answer(down, http.StatusBadRequest)
		p.logf("egress proxy: CONNECT %q: not host:port", target)
		return
	}
	addr, ok := p.resolve(host, port)
	if !ok {
		answer(down, http.StatusBadGateway)
		p.logf("egress proxy: CONNECT %s refused: no pod of this sandbox has that IP", target)
		return
	}
	up, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		answer(down, http.StatusServiceUnavailable)
		p.logf("egress proxy: CONNECT %s (%s): %v", target, addr, err)
		return
	}
	defer up.Close()
	if !p.Track(up) {
		return
	}
	defer p.Untrack(up)
	// The API server's tunnel reads the status line and headers and
	// refuses anything buffered after them: answer with nothing more.
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	_ = down.SetDeadline(time.Time{})
	relay(down, br, up)
}

func answer(w io.Writer, code int) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", code, http.StatusText(code))
}

// relay copies both ways until either side ends, then closes both.
func relay(down net.Conn, br *bufio.Reader, up net.Conn) {
	var once sync.Once
	done := make(chan struct{})
	end := func() { once.Do(func() { close(done) }) }
	go func() {
		_, _ = io.Copy(up, br)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			end()
		}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		end()
	}()
	<-done
}

// Close stops listening, cuts every relayed connection and waits.
func (p *Proxy) Close() {
	p.Server.Close()
	if a, ok := p.Addr().(*net.UnixAddr); ok {
		_ = os.Remove(a.Name)
	}
}

// Config is the EgressSelectorConfiguration that sends the API server's
// "cluster" traffic to an HTTP CONNECT proxy on the Unix socket at
// socket. (A TCP transport would need TLS: kube-apiserver's egress
// selector, k8s.io/apiserver v0.37 pkg/server/egressselector, dials a TCP
// proxy with TLS whatever the URL's scheme, and validation refuses a
// tlsConfig with http://.)
func Config(socket string) string {
	return "apiVersion: apiserver.k8s.io/v1beta1\n" +
		"kind: EgressSelectorConfiguration\n" +
		"egressSelections:\n" +
		"- name: cluster\n" +
		"  connection:\n" +
		"    proxyProtocol: HTTPConnect\n" +
		"    transport:\n" +
		"      uds:\n" +
		"        udsName: " + strconv.Quote(socket) + "\n"
}

// SocketPath returns a path for the proxy's socket in dir, or, when that
// is too long for a Unix socket (108 bytes with the NUL on Linux), in a
// new temporary directory.
func SocketPath(dir string) (string, error) {
	p := filepath.Join(dir, "egress.sock")
	if len(p) < 100 {
		return p, nil
	}
	d, err := os.MkdirTemp("", "hactl-egress-")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "egress.sock"), nil
}
