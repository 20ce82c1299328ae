package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
)

// Conns keeps member clients open across Probe calls, for callers that
// probe the same members again and again (status --watch, the TUI): a
// round then costs the members' answers, not a dial and a handshake each.
// An engine that can reuse its clients (etcd's gRPC connections) keeps
// them here, keyed by ConnKey; one that cannot (Patroni 3.0.2 closes
// every connection after its answer) ignores it. A client whose member
// did not answer in a round is dropped, so the next round dials afresh
// rather than a client reconnecting in the background for good (between
// rounds gRPC may redial a dropped connection, at most about once a
// second). Safe for concurrent use.
type Conns struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	clients map[string]io.Closer
	closed  bool
}

// NewConns returns an empty cache. Its clients live until Close (or until
// dropped); Context is theirs.
func NewConns() *Conns {
	ctx, cancel := context.WithCancel(context.Background())
	return &Conns{ctx: ctx, cancel: cancel, clients: map[string]io.Closer{}}
}

// Context bounds the life of the cached clients: it ends at Close.
func (c *Conns) Context() context.Context { return c.ctx }

// ConnKey identifies a client: the engine, the member's pod (its UID
// too, so a recreated pod never gets the old one's connection), the
// port, the name its certificate is checked against and the client
// credentials and user (a rotated Secret means a new client).
func ConnKey(engine string, t Target, creds *Credentials, auth ...*BasicAuth) string {
	k := fmt.Sprintf("%s|%s/%s|%s|%d|%s", engine, t.Namespace, t.Pod, t.UID, t.Port, t.ServerName)
	for _, a := range auth {
		if a == nil {
			continue
		}
		h := sha256.New()
		fmt.Fprintf(h, "%d:%s%d:%s", len(a.Username), a.Username, len(a.Password), a.Password)
		k += "|auth:" + hex.EncodeToString(h.Sum(nil)[:8])
	}
	if creds != nil {
		h := sha256.New()
		for _, b := range [][]byte{creds.CertPEM, creds.KeyPEM, creds.CAPEM, []byte(creds.ServerName)} {
			fmt.Fprintf(h, "%d:", len(b))
			h.Write(b)
		}
		k += "|" + hex.EncodeToString(h.Sum(nil)[:8])
	}
	return k
}

// Get returns the client cached under key.
func (c *Conns) Get(key string) (io.Closer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.clients[key]
	return v, ok
}

// Put caches v under key and reports whether it did: not after Close,
// and not over another client (the caller then uses the one Get returns
// and closes its own).
func (c *Conns) Put(key string, v io.Closer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if _, ok := c.clients[key]; ok {
		return false
	}
	c.clients[key] = v
	return true
}

// Drop removes v from under key, if it is still there, and closes it.
func (c *Conns) Drop(key string, v io.Closer) {
	c.mu.Lock()
	if cur, ok := c.clients[key]; ok && cur == v {
		delete(c.clients, key)
	}
	c.mu.Unlock()
	_ = v.Close()
}

// Retain closes and forgets every client whose key keep rejects (members
// gone since the last round).
func (c *Conns) Retain(keep func(key string) bool) {
	c.mu.Lock()
	var gone []io.Closer
	for k, v := range c.clients {
		if !keep(k) {
			gone = append(gone, v)
			delete(c.clients, k)
		}
	}
	c.mu.Unlock()
	for _, v := range gone {
		_ = v.Close()
	}
}

// Len is the number of cached clients.
func (c *Conns) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}

// Close closes every cached client; later Puts are refused.
func (c *Conns) Close() {
	c.mu.Lock()
	c.closed = true
	all := c.clients
	c.clients = map[string]io.Closer{}
	c.mu.Unlock()
	for _, v := range all {
		_ = v.Close()
	}
	c.cancel()
}
