package artifact_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
)

const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func validManifest() *artifact.Manifest {
	m := &artifact.Manifest{
		Identity:  identity("g1"),
		Source:    artifact.Source{Namespace: "db", Cluster: "etcd-main", Member: "etcd-main-0"},
		Upload:    "20261129t120000z-0a1b2c3d",
		Files:     []artifact.File{{Path: "snapshot.db", Size: 4, SHA256: sha}, {Path: "extra/wal/0001.wal", Size: 0, SHA256: sha}},
		CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		CreatedBy: "kubectl-hactl test",
	}
	if err := m.Seal(); err != nil {
		panic(err)
	}
	return m
}

func TestManifestRoundTrip(t *testing.T) {
	m := validManifest()
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := artifact.DecodeManifest(b)
	if err != nil {
		t.Fatalf("decoding what Encode wrote: %v\n%s", err, b)
	}
	if got.Digest != m.Digest || got.Identity != m.Identity || len(got.Files) != 2 {
		t.Fatalf("round trip changed the manifest:\n%+v\n%+v", got, m)
	}
	if !strings.HasPrefix(m.Digest, "sha256:") || len(m.Digest) != len("sha256:")+64 {
		t.Fatalf("digest %q", m.Digest)
	}
	for _, want := range []string{`"manifestVersion": 1`, `"kind": "SeedGeneration"`, `"clusterID": "cdf818194e3a8c32"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("encoded manifest lacks %s:\n%s", want, b)
		}
	}
}

// Every field is covered by the digest: changing any one without
// recomputing it is caught.
func TestDigestCoversEveryField(t *testing.T) {
	for name, mutate := range map[string]func(m *artifact.Manifest){
		"generation":     func(m *artifact.Manifest) { m.Identity.Generation = "g2" },
		"engine version": func(m *artifact.Manifest) { m.Identity.EngineVersion = "3.5.0" },
		"cluster":        func(m *artifact.Manifest) { m.Identity.ClusterID = "aaaa" },
		"source member":  func(m *artifact.Manifest) { m.Identity.SourceMemberID = "bbbb" },
		"term":           func(m *artifact.Manifest) { m.Identity.RaftTerm++ },
		"index":          func(m *artifact.Manifest) { m.Identity.RaftIndex++ },
		"revision":       func(m *artifact.Manifest) { m.Identity.Revision++ },
		"source":         func(m *artifact.Manifest) { m.Source.Member = "etcd-main-2" },
		"created":        func(m *artifact.Manifest) { m.CreatedAt = m.CreatedAt.Add(time.Second) },
		"created by":     func(m *artifact.Manifest) { m.CreatedBy = "someone" },
		"upload":         func(m *artifact.Manifest) { m.Upload = "other" },
		"file hash":      func(m *artifact.Manifest) { m.Files[0].SHA256 = strings.Repeat("0", 64) },
		"file size": func(m *artifact.Manifest) {
			m.Files[0].Size++
			m.TotalSize++
		},
		"file path": func(m *artifact.Manifest) { m.Files[0].Path = "other.db" },
	} {
		t.Run(name, func(t *testing.T) {
			m := validManifest()
			mutate(m)
			b, _ := m.Encode()
			_, err := artifact.DecodeManifest(b)
			if !errors.Is(err, artifact.ErrDigestMismatch) {
				t.Fatalf("err = %v, want ErrDigestMismatch", err)
			}
		})
	}
}

func TestDecodeManifestRefusals(t *testing.T) {
	reseal := func(mut func(m *artifact.Manifest)) func() []byte {
		return func() []byte {
			m := validManifest()
			mut(m)
			m.Digest = artifact.ComputeDigest(m)
			b, _ := m.Encode()
			return b
		}
	}
	raw := func(s string) func() []byte { return func() []byte { return []byte(s) } }
	valid := func() string { b, _ := validManifest().Encode(); return string(b) }
	for _, tc := range []struct {
		name string
		in   func() []byte
		want error
	}{
		{"not JSON", raw("manifest"), artifact.ErrManifestInvalid},
		{"empty", raw(""), artifact.ErrManifestInvalid},
		{"no version", raw(`{"kind":"SeedGeneration"}`), artifact.ErrManifestInvalid},
		{"version not a number", raw(`{"manifestVersion":"1"}`), artifact.ErrManifestInvalid},
		{"version 2", raw(`{"kind":"SeedGeneration","manifestVersion":2,"whatever":true}`), artifact.ErrUnknownManifestVersion},
		{"version 0", raw(`{"manifestVersion":0}`), artifact.ErrUnknownManifestVersion},
		{"a field of the wrong kind", func() []byte { return []byte(strings.Replace(valid(), `"kind": "SeedGeneration"`, `"kind": 7`, 1)) }, artifact.ErrManifestInvalid},
		{"unknown field", func() []byte { return []byte(strings.Replace(valid(), `"kind"`, `"extra":1,"kind"`, 1)) }, artifact.ErrManifestInvalid},
		{"trailing data", func() []byte { return []byte(valid() + "{}") }, artifact.ErrManifestInvalid},
		{"too large", func() []byte { return []byte(valid() + strings.Repeat(" ", artifact.MaxManifestBytes)) }, artifact.ErrManifestInvalid},
		{"wrong kind", reseal(func(m *artifact.Manifest) { m.Kind = "Backup" }), artifact.ErrManifestInvalid},
		{"dot-dot path", reseal(func(m *artifact.Manifest) { m.Files[0].Path = "../../etc/passwd" }), artifact.ErrUnsafePath},
		{"inner dot-dot", reseal(func(m *artifact.Manifest) { m.Files[0].Path = "a/../../b" }), artifact.ErrUnsafePath},
		{"absolute path", reseal(func(m *artifact.Manifest) { m.Files[0].Path = "/var/lib/etcd/member" }), artifact.ErrUnsafePath},
		{"backslash", reseal(func(m *artifact.Manifest) { m.Files[0].Path = `..\x` }), artifact.ErrUnsafePath},
		{"duplicate path", reseal(func(m *artifact.Manifest) { m.Files[1].Path = m.Files[0].Path }), artifact.ErrManifestInvalid},
		{"file and dir", reseal(func(m *artifact.Manifest) { m.Files[1].Path = m.Files[0].Path + "/x" }), artifact.ErrManifestInvalid},
		{"bad hash", reseal(func(m *artifact.Manifest) { m.Files[0].SHA256 = "XYZ" }), artifact.ErrManifestInvalid},
		{"negative size", reseal(func(m *artifact.Manifest) { m.Files[0].Size = -1; m.TotalSize = -1 }), artifact.ErrManifestInvalid},
		{"wrong total", reseal(func(m *artifact.Manifest) { m.TotalSize = 99 }), artifact.ErrManifestInvalid},
		{"no files", reseal(func(m *artifact.Manifest) { m.Files = nil; m.TotalSize = 0 }), artifact.ErrManifestInvalid},
		{"no cluster", reseal(func(m *artifact.Manifest) { m.Identity.ClusterID = "" }), artifact.ErrManifestInvalid},
		{"newline in cluster", reseal(func(m *artifact.Manifest) { m.Identity.ClusterID = "a\nfile x 1 y" }), artifact.ErrManifestInvalid},
		{"bad generation", reseal(func(m *artifact.Manifest) { m.Identity.Generation = "../g" }), artifact.ErrInvalidGeneration},
		{"bad upload", reseal(func(m *artifact.Manifest) { m.Upload = "../x" }), artifact.ErrManifestInvalid},
		{"no created", reseal(func(m *artifact.Manifest) { m.CreatedAt = time.Time{} }), artifact.ErrManifestInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := artifact.DecodeManifest(tc.in())
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "artifact.") {
				t.Errorf("the error names a Go type: %v", err)
			}
		})
	}
}

func TestValidatePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"snapshot.db":             true,
		"member/snap/db":          true,
		"member/wal/0.wal":        true,
		"a-b_c.d/e":               true,
		"ünïcode/файл":            true,
		"":                        false,
		".":                       false,
		"..":                      false,
		"../x":                    false,
		"x/..":                    false,
		"x/../y":                  false,
		"./x":                     false,
		"x/./y":                   false,
		"x//y":                    false,
		"x/":                      false,
		"/x":                      false,
		"/":                       false,
		`x\y`:                     false,
		`..\..\x`:                 false,
		"C:/x":                    false,
		"c:x":                     false,
		"x\x00y":                  false,
		"x\ny":                    false,
		"\xff":                    false,
		strings.Repeat("a", 2000): false,
	} {
		err := artifact.ValidatePath(p)
		if ok && err != nil {
			t.Errorf("ValidatePath(%q) = %v, want ok", p, err)
		}
		if !ok && !errors.Is(err, artifact.ErrUnsafePath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrUnsafePath", p, err)
		}
	}
}

func TestValidateGeneration(t *testing.T) {
	for g, ok := range map[string]bool{
		"g1": true, "2026-11-29": true, "nightly.42": true, "a_b": true, "x": true,
		strings.Repeat("a", 63): true,
		"":                      false, "G1": false, "-g": false, "g-": false, ".g": false, "a..b": false,
		"a/b": false, "a b": false, "ü": false, strings.Repeat("a", 64): false,
	} {
		err := artifact.ValidateGeneration(g)
		if ok != (err == nil) || (!ok && !errors.Is(err, artifact.ErrInvalidGeneration)) {
			t.Errorf("ValidateGeneration(%q) = %v, want ok=%v", g, err, ok)
		}
	}
}

func TestCheck(t *testing.T) {
	m := validManifest()
	for _, tc := range []struct {
		e    artifact.Expect
		want error
	}{
		{artifact.Expect{}, nil},
		{artifact.Expect{Engine: "etcd", ClusterID: "CDF818194E3A8C32", MinRevision: 1001, MinRaftTerm: 3}, nil},
		{artifact.Expect{ClusterID: "aaaaaaaaaaaaaaaa"}, artifact.ErrWrongCluster},
		{artifact.Expect{Engine: "patroni"}, artifact.ErrWrongCluster},
		{artifact.Expect{MinRevision: 1002}, artifact.ErrStale},
		{artifact.Expect{MinRaftTerm: 4}, artifact.ErrStale},
	} {
		err := artifact.Check(m, tc.e)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("Check(%+v) = %v, want %v", tc.e, err, tc.want)
		}
	}
}

// every named error has a distinct message and is documented
func TestNamedErrorsDistinct(t *testing.T) {
	errs := []error{
		artifact.ErrNoManifest, artifact.ErrUnknownManifestVersion, artifact.ErrManifestInvalid,
		artifact.ErrUnsafePath, artifact.ErrDigestMismatch, artifact.ErrWrongCluster, artifact.ErrStale,
		artifact.ErrMissingFile, artifact.ErrExtraFile, artifact.ErrSizeMismatch, artifact.ErrChecksumMismatch,
		artifact.ErrTruncated, artifact.ErrGenerationExists, artifact.ErrInvalidGeneration, artifact.ErrInvalidStore,
		artifact.ErrDataDirNotEmpty, artifact.ErrDataDirUnusable, artifact.ErrRestoreCheck, artifact.ErrInUse,
		artifact.ErrGenerationChanged, artifact.ErrNoSpace,
	}
	seen := map[string]bool{}
	for _, e := range errs {
		if seen[e.Error()] {
			t.Errorf("two errors say %q", e)
		}
		seen[e.Error()] = true
		for _, o := range errs {
			if o != e && errors.Is(e, o) {
				t.Errorf("%v is also %v", e, o)
			}
		}
	}
	_ = fmt.Sprint()
}
