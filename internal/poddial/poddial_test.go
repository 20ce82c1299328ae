package poddial

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDialsThePodIP: a pod's port is dialled at the IP the lookup gives;
// a pod without one is an error naming it; ALL_PROXY and NO_PROXY are
// honoured: a pod IP NO_PROXY names is dialled directly, another goes to
// the proxy (here one that is gone, so the dial fails, naming the pod).
// golang.org/x/net/proxy reads them once per process: this is the
// package's only test that sets them.
func TestDialsThePodIP(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	t.Setenv("ALL_PROXY", "socks5://"+deadAddr)
	t.Setenv("NO_PROXY", "127.0.0.1")

	serve := func(addr string) int {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("hi"))
				c.Close()
			}
		}()
		return ln.Addr().(*net.TCPAddr).Port
	}
	port := serve("127.0.0.1:0")
	other := serve("127.0.0.2:0")
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(other))); err != nil {
		t.Fatalf("etcd-1's port does not answer directly: %v", err)
	} else {
		c.Close()
	}
	dial := New(func(ns, pod string) (string, error) {
		switch {
		case ns == "db" && pod == "etcd-0":
			return "127.0.0.1", nil
		case ns == "db" && pod == "etcd-1":
			return "127.0.0.2", nil
		}
		return "", errors.New("pod not found")
	}, 5*time.Second)
	ctx := context.Background()
	c, err := dial(ctx, "db", "etcd-0", port)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
		t.Errorf("read %q %v", buf, err)
	}
	c.Close()

	if _, err := dial(ctx, "db", "etcd-9", port); err == nil || !strings.Contains(err.Error(), "db/etcd-9") || !strings.Contains(err.Error(), "pod not found") {
		t.Errorf("unknown pod: %v", err)
	}

	// etcd-1's IP is not in NO_PROXY: the dial goes to the proxy, which
	// is gone, although the pod's port would answer directly.
	if c, err := dial(ctx, "db", "etcd-1", other); err == nil {
		c.Close()
		t.Error("ALL_PROXY was ignored: the pod was dialled directly")
	} else if !strings.Contains(err.Error(), "db/etcd-1") {
		t.Errorf("through a dead proxy: %v", err)
	}
}
