package exporter

import (
	"fmt"
	"net/http"
)

// ReadOnly wraps an API client's transport (rest.Config.Wrap) so that no
// request but GET, HEAD and OPTIONS leaves the process: the exporter's
// promise that it changes nothing, kept below everything that might
// forget it.
func ReadOnly(rt http.RoundTripper) http.RoundTripper { return readOnly{next: rt} }

type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return r.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, fmt.Errorf("%s %s not sent: the exporter only reads", req.Method, req.URL.Path)
}
