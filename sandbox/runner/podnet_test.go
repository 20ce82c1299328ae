package runner

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// TestPodNetReachesPodIPs: through the pod network proxy, as
// golang.org/x/net/proxy dials with ALL_PROXY, a pod IP the runner handed
// out reaches the member's own address; an IP it did not hand out, and
// one of another block, are refused.
func TestPodNetReachesPodIPs(t *testing.T) {
	addrs := NewAddresses(251)
	m, err := addrs.For("db", "etcd-0")
	if err != nil {
		t.Fatal(err)
	}
	port := serveEach(t, net.JoinHostPort(m.Address, "0"), func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write([]byte("echo " + line))
	})

	pn, err := StartPodNetwork("127.251.0.1:0", addrs.ByPodIP, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer pn.Close()
	t.Setenv("ALL_PROXY", pn.URL())
	d := proxy.FromEnvironment().(proxy.ContextDialer)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(m.PodIP, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("dialling pod IP %s: %v", m.PodIP, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "echo hello\n" {
		t.Errorf("through the proxy: %q %v", got, err)
	}

	for _, ip := range []string{"10.244.251.9", "10.244.7.1", "192.0.2.1"} {
		if c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
			c.Close()
			t.Errorf("%s reached, want refused", ip)
		} else if !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("%s: %v, want host unreachable", ip, err)
		}
	}
}

// serveEach listens at addr until the test ends, runs handle for each
// connection (closing it after) and returns the port.
func serveEach(t *testing.T, addr string, handle func(net.Conn)) int {
	t.Helper()
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
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
