package actions

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// held are the locks this process holds now (AcquireLock adds, Release
// removes).
var held sync.Map // *Lock -> struct{}

// GuardTransport wraps an API client's transport (rest.Config.Wrap) so
// that no changing request (POST, PUT, PATCH, DELETE) leaves this process
// while a lock it holds is no longer known valid (Lock.Valid). The
// executor checks validity before each step; this check sits right before
// the request is written, so a holder frozen (SIGSTOP, a paused VM) after
// that check and woken past its renew deadline still sends nothing.
// Requests to Leases pass: they are the lock's own renewals and release,
// fenced by the Lease's resourceVersion.
func GuardTransport(rt http.RoundTripper) http.RoundTripper {
	return guard{rt}
}

type guard struct{ next http.RoundTripper }

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return g.next.RoundTrip(req)
	}
	if strings.Contains(req.URL.Path, "/apis/coordination.k8s.io/") {
		return g.next.RoundTrip(req)
	}
	var err error
	held.Range(func(k, _ any) bool {
		err = k.(*Lock).Valid()
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s not sent: %w", req.Method, req.URL.Path, err)
	}
	return g.next.RoundTrip(req)
}
