package exporter

import (
	"fmt"
	"net/http"
)

// ReadOnly wraps an API client's transport (rest.Config.Wrap) so that no
// request but GET, HEAD and OPTIONS leaves the process, and none that asks
// to upgrade the connection (exec, attach and port-forward are GETs that
// upgrade): the exporter's promise that it changes nothing, kept below
// everything that might forget it.
func ReadOnly(rt http.RoundTripper) http.RoundTripper { return readOnly{next: rt} }

type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if req.Header.Get("Upgrade") == "" {
			return r.next.RoundTrip(req)
		}
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, fmt.Errorf("%s %s (upgrade %q) not sent: the exporter only reads", req.Method, req.URL.Path, req.Header.Get("Upgrade"))
}
