package runner

import (
	"fmt"
	"sync"
)

// Addresses hands out each member's addresses within the sandbox's block
// b: member n (1…254) listens for clients and advertises at 127.b.1.n,
// really listens for peers at 127.b.2.n behind the peer proxy, is reached
// by port-forwards at 127.b.3.n (the forward proxy), and reports pod IP
// 10.244.b.n. Members are keyed by namespace/pod name, so a
// recreated pod (same DNS name) keeps its addresses.
type Addresses struct {
	block int

	mu    sync.Mutex
	byPod map[string]int
	next  int
}

// MemberAddrs are one member's addresses.
type MemberAddrs struct {
	// Address is where the member serves clients and advertises itself.
	Address string
	// PeerAddress is where it really listens for peers.
	PeerAddress string
	// PodIP is the pod IP its status reports (never dialled).
	PodIP string
	// ForwardAddress is where kwok's port-forward reaches the member:
	// the runner's forward proxy, relaying to Address.
	ForwardAddress string
}

// NewAddresses allocates within block b (1…254).
func NewAddresses(b int) *Addresses {
	return &Addresses{block: b, byPod: map[string]int{}, next: 1}
}

// For returns the addresses of pod ns/name, allocating them on first use.
func (a *Addresses) For(ns, name string) (MemberAddrs, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := ns + "/" + name
	n, ok := a.byPod[key]
	if !ok {
		if a.next > 254 {
			return MemberAddrs{}, fmt.Errorf("no addresses left in block %d for %s", a.block, key)
		}
		n = a.next
		a.next++
		a.byPod[key] = n
	}
	return MemberAddrs{
		Address:     fmt.Sprintf("127.%d.1.%d", a.block, n),
		PeerAddress: fmt.Sprintf("127.%d.2.%d", a.block, n),
		PodIP:       fmt.Sprintf("10.244.%d.%d", a.block, n),

		ForwardAddress: fmt.Sprintf("127.%d.3.%d", a.block, n),
	}, nil
}

// ByPodIP returns the address (127.b.1.n:port) that stands for port of
// pod IP ip (10.244.b.n), when a pod of this block was given it. A
// hostNetwork pod reports its member address (127.b.1.n, standing for its
// node's IP) as pod IP: that resolves to itself.
func (a *Addresses) ByPodIP(ip string, port int) (string, bool) {
	var b, n int
	_, err := fmt.Sscanf(ip, "10.244.%d.%d", &b, &n)
	if err != nil || fmt.Sprintf("10.244.%d.%d", b, n) != ip {
		if _, err := fmt.Sscanf(ip, "127.%d.1.%d", &b, &n); err != nil || fmt.Sprintf("127.%d.1.%d", b, n) != ip {
			return "", false
		}
	}
	if b != a.block {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.byPod {
		if m == n {
			return fmt.Sprintf("127.%d.1.%d:%d", a.block, n, port), true
		}
	}
	return "", false
}
