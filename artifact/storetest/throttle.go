package storetest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Throttle is an S3 proxy that slows the request bodies of multipart
// uploads while Slow is set and closes Started once the first 64 KiB of
// one arrived: a test can then kill an upload in flight.
type Throttle struct {
	// Slow limits upload bodies to 16 KiB per 100 ms while set.
	Slow atomic.Bool
	// Seen counts the upload bytes that passed.
	Seen    atomic.Int64
	started chan struct{}
	once    sync.Once
}

// NewThrottle returns a throttle that starts slow.
func NewThrottle() *Throttle {
	th := &Throttle{started: make(chan struct{})}
	th.Slow.Store(true)
	return th
}

// Started is closed once an upload is under way.
func (th *Throttle) Started() <-chan struct{} { return th.started }

// Proxy serves the throttling proxy in front of target (an S3 endpoint)
// until the test ends, and returns its URL.
func (th *Throttle) Proxy(t testing.TB, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/uploads/") && r.Body != nil {
			r.Body = &slowBody{r: r.Body, th: th}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type slowBody struct {
	r  io.ReadCloser
	th *Throttle
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.th.Slow.Load() {
		if len(p) > 16<<10 {
			p = p[:16<<10]
		}
		time.Sleep(100 * time.Millisecond) // the bandwidth limit itself, not a wait
	}
	n, err := b.r.Read(p)
	if b.th.Seen.Add(int64(n)) > 64<<10 {
		b.th.once.Do(func() { close(b.th.started) })
	}
	return n, err
}

func (b *slowBody) Close() error { return b.r.Close() }
