// Package ocitest runs a real OCI distribution registry for tests:
// go-containerregistry's, in memory, on loopback (plain HTTP, which
// go-containerregistry's clients use for loopback registries), and pushes
// images to it.
package ocitest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running registry.
type Registry struct {
	// Host is its address, host:port, the registry part of its images'
	// names.
	Host     string
	srv      *httptest.Server
	requests atomic.Int64
}

// Start runs a registry until the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		r.requests.Add(1)
		h.ServeHTTP(w, q)
	}))
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// Requests is how many requests it answered.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// Close stops it: later requests find nothing listening.
func (r *Registry) Close() { r.srv.Close() }

// Push writes a new random image under repo:tag (without the host) and
// returns the full tag (Host/repo:tag) and the image's digest (sha256:…).
func (r *Registry) Push(t testing.TB, repoTag string) (tag, digest string) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag = r.Host + "/" + repoTag
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag, d.String()
}
