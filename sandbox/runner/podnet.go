package runner

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/connserve"
)

// PodNetwork stands in for the pod network for hactl's agent: a SOCKS5
// proxy (RFC 1928: no authentication, CONNECT to an IPv4 address) that
// reaches a pod IP's port at the address its resolver names, the way a
// pod reaches another pod's IP in a cluster. The runner's resolves the pod
// IPs it handed out (10.244.b.n) to the members' own addresses (127.b.1.n),
// and containers of hactl's agent get it as ALL_PROXY (the in-cluster
// exporter dials pod IPs; internal/poddial honours ALL_PROXY). Anything
// the resolver does not know is refused.
type PodNetwork struct {
	*connserve.Server
	resolve func(ip string, port int) (string, bool)
	logf    func(string, ...any)
}

// StartPodNetwork listens at addr (host:port, port 0 for any); resolve
// maps a pod IP and port to the address (host:port) that stands for it.
func StartPodNetwork(addr string, resolve func(ip string, port int) (string, bool), logf func(string, ...any)) (*PodNetwork, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("runner: pod network proxy: %w", err)
	}
	p := &PodNetwork{resolve: resolve, logf: logf}
	p.Server = connserve.Serve(ln, p.handle)
	return p, nil
}

// URL is what ALL_PROXY says to reach it.
func (p *PodNetwork) URL() string { return "socks5://" + p.Addr().String() }

// SOCKS5 reply codes (RFC 1928, 6).
const (
	socksOK          = 0x00
	socksHostUnreach = 0x04
	socksRefused     = 0x05
	socksCmdUnsupp   = 0x07
	socksAddrUnsupp  = 0x08
)

func (p *PodNetwork) handle(down net.Conn) {
	defer down.Close()
	_ = down.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(down)
	target, code, err := p.request(br, down)
	if err != nil {
		if code != 0 {
			reply(down, code)
		}
		p.logf("runner: pod network proxy: %v", err)
		return
	}
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		reply(down, socksRefused)
		p.logf("runner: pod network proxy: %v", err)
		return
	}
	defer up.Close()
	if !p.Track(up) {
		return
	}
	defer p.Untrack(up)
	reply(down, socksOK)
	_ = down.SetDeadline(time.Time{})
	relay(down, br, up)
}

// request reads the greeting and the CONNECT request and returns the
// address that stands for its pod IP, or the reply code to refuse with.
func (p *PodNetwork) request(br *bufio.Reader, w io.Writer) (string, byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(br, head[:]); err != nil || head[0] != 5 {
		return "", 0, fmt.Errorf("not a SOCKS5 greeting (%v)", err)
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return "", 0, err
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == 0
	}
	if !noAuth {
		_, _ = w.Write([]byte{5, 0xff})
		return "", 0, fmt.Errorf("the client offers no unauthenticated method")
	}
	if _, err := w.Write([]byte{5, 0}); err != nil {
		return "", 0, err
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return "", 0, err
	}
	if req[0] != 5 {
		return "", 0, fmt.Errorf("not a SOCKS5 request (version %d)", req[0])
	}
	if req[1] != 1 {
		return "", socksCmdUnsupp, fmt.Errorf("command %d refused: only CONNECT", req[1])
	}
	if req[3] != 1 {
		return "", socksAddrUnsupp, fmt.Errorf("address type %d refused: only pod IPs (IPv4)", req[3])
	}
	var a [6]byte
	if _, err := io.ReadFull(br, a[:]); err != nil {
		return "", 0, err
	}
	ip := net.IP(a[:4]).String()
	port := binary.BigEndian.Uint16(a[4:])
	addr, ok := p.resolve(ip, int(port))
	if !ok {
		return "", socksHostUnreach, fmt.Errorf("%s is no pod IP of this sandbox", ip)
	}
	return addr, 0, nil
}

func reply(w io.Writer, code byte) {
	_, _ = w.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
}
