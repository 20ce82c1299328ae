// Package poddial reaches a pod's port the way a client inside the
// cluster does: at the pod's IP, with no API server in between. It is the
// dialer of hactl's in-cluster exporter (agent exporter), where a
// port-forward would need the right to create pods/portforward and would
// carry every probe through the API server.
//
// It honours ALL_PROXY and NO_PROXY (SOCKS5), as golang.org/x/net/proxy
// reads them: where pod IPs are reached only through a proxy, set them in
// the exporter's environment.
package poddial

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"golang.org/x/net/proxy"
)

// IPLookup returns the IP of pod namespace/name, or why there is none.
type IPLookup func(namespace, pod string) (string, error)

// New returns a dialer of pod ports at the IPs lookup returns; connect
// bounds each connection's setup (0: only the caller's context).
func New(lookup IPLookup, connect time.Duration) func(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	// golang.org/x/net/proxy reads ALL_PROXY and NO_PROXY once per
	// process.
	d := proxy.FromEnvironmentUsing(&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second})
	return func(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
		ip, err := lookup(namespace, pod)
		if err != nil {
			return nil, fmt.Errorf("reaching pod %s/%s: %w", namespace, pod, err)
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		var c net.Conn
		if cd, ok := d.(proxy.ContextDialer); ok {
			c, err = cd.DialContext(ctx, "tcp", addr)
		} else {
			c, err = d.Dial("tcp", addr)
		}
		if err != nil {
			return nil, fmt.Errorf("reaching pod %s/%s at %s: %w", namespace, pod, addr, err)
		}
		return c, nil
	}
}
