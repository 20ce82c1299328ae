package engine_test

import (
	"testing"

	"github.com/hactl-dev/hactl/engine"
)

type closer struct{ closed int }

func (c *closer) Close() error { c.closed++; return nil }

// Conns keeps one client per key, closes what it drops, retains or holds
// at Close, and refuses clients after Close.
func TestConns(t *testing.T) {
	c := engine.NewConns()
	a, b, x := &closer{}, &closer{}, &closer{}
	if !c.Put("a", a) || !c.Put("b", b) || c.Put("a", x) {
		t.Fatal("Put: one client per key")
	}
	if v, ok := c.Get("a"); !ok || v != a {
		t.Fatalf("Get(a) = %v, %v", v, ok)
	}
	c.Drop("a", x) // not the cached one: a stays, x is closed
	if v, _ := c.Get("a"); v != a || x.closed != 1 || a.closed != 0 {
		t.Fatalf("Drop of another client: cached %v, closes a=%d x=%d", v, a.closed, x.closed)
	}
	c.Retain(func(k string) bool { return k == "a" })
	if _, ok := c.Get("b"); ok || b.closed != 1 || c.Len() != 1 {
		t.Fatalf("Retain: b kept %v, closed %d, len %d", ok, b.closed, c.Len())
	}
	if c.Context().Err() != nil {
		t.Fatal("context ended before Close")
	}
	c.Close()
	if a.closed != 1 || c.Len() != 0 || c.Put("c", &closer{}) || c.Context().Err() == nil {
		t.Fatalf("Close: a closed %d, len %d", a.closed, c.Len())
	}
}

// Keys differ by pod UID and by credentials, not by the member's name.
func TestConnKey(t *testing.T) {
	tg := engine.Target{Member: "m", Namespace: "ns", Pod: "p", Port: 2379, UID: "u1"}
	k := engine.ConnKey("etcd", tg, nil)
	other := tg
	other.UID = "u2"
	renamed := tg
	renamed.Member = "other"
	cred := &engine.Credentials{CertPEM: []byte("c"), KeyPEM: []byte("k")}
	rotated := &engine.Credentials{CertPEM: []byte("c2"), KeyPEM: []byte("k")}
	switch {
	case engine.ConnKey("etcd", other, nil) == k:
		t.Error("a new pod UID gave the same key")
	case engine.ConnKey("etcd", renamed, nil) != k:
		t.Error("the member's display name changed the key")
	case engine.ConnKey("etcd", tg, cred) == k, engine.ConnKey("etcd", tg, cred) == engine.ConnKey("etcd", tg, rotated):
		t.Error("credentials did not change the key")
	}
}
