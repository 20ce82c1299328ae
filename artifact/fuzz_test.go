package artifact_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/artifact"
)

// FuzzDecodeManifest: the decoder never panics, refuses with one of the
// named errors, and whatever it accepts is safe to act on (valid identity,
// safe paths, matching digest) and survives a round trip unchanged.
// Seed corpus: testdata/fuzz/FuzzDecodeManifest.
func FuzzDecodeManifest(f *testing.F) {
	b, _ := validManifest().Encode()
	f.Add(b)
	f.Add([]byte(`{"manifestVersion":2}`))
	f.Add([]byte(`{"kind":"SeedGeneration","manifestVersion":1,"files":[{"path":"../x","size":1,"sha256":"00"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := artifact.DecodeManifest(data)
		if err != nil {
			named := false
			for _, e := range []error{artifact.ErrManifestInvalid, artifact.ErrUnknownManifestVersion, artifact.ErrUnsafePath, artifact.ErrDigestMismatch, artifact.ErrInvalidGeneration} {
				named = named || errors.Is(err, e)
			}
			if !named {
				t.Fatalf("refusal without a named error: %v", err)
			}
			return
		}
		if err := m.Identity.Validate(); err != nil {
			t.Fatalf("accepted an invalid identity: %v", err)
		}
		for _, fl := range m.Files {
			if err := artifact.ValidatePath(fl.Path); err != nil {
				t.Fatalf("accepted an unsafe path: %v", err)
			}
		}
		if artifact.ComputeDigest(m) != m.Digest {
			t.Fatal("accepted a manifest whose digest does not match")
		}
		again, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := artifact.DecodeManifest(again)
		if err != nil {
			t.Fatalf("re-encoding an accepted manifest made it invalid: %v", err)
		}
		if m2.Digest != m.Digest || m2.Identity != m.Identity || len(m2.Files) != len(m.Files) {
			t.Fatal("round trip changed an accepted manifest")
		}
	})
}

// FuzzValidatePath: an accepted path always stays inside the directory it
// is joined to, on every platform's rules hactl restores on.
// Seed corpus: testdata/fuzz/FuzzValidatePath.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"snapshot.db", "member/snap/db", "../x", "/abs", "a/../../b", `..\x`, "a//b", "."} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := artifact.ValidatePath(p)
		if err != nil {
			if !errors.Is(err, artifact.ErrUnsafePath) {
				t.Fatalf("refusal without ErrUnsafePath: %v", err)
			}
			return
		}
		const root = "/restore/staging"
		joined := filepath.Join(root, filepath.FromSlash(p))
		if !strings.HasPrefix(joined, root+string(filepath.Separator)) {
			t.Fatalf("accepted %q, which escapes the root: %s", p, joined)
		}
		if !filepath.IsLocal(p) || strings.Contains(p, "\\") || strings.HasPrefix(p, "/") {
			t.Fatalf("accepted a non-local path %q", p)
		}
		for _, el := range strings.Split(p, "/") {
			if el == "" || el == "." || el == ".." {
				t.Fatalf("accepted %q with element %q", p, el)
			}
		}
	})
}
