package artifact_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the fuzz seed corpus under testdata/fuzz")

// TestSeedCorpus checks that the checked-in seed corpus exists and covers
// each refusal; with -update-corpus it rewrites it.
func TestSeedCorpus(t *testing.T) {
	manifests := corpusManifests()
	paths := map[string]string{
		"plain":        "snapshot.db",
		"nested":       "member/snap/db",
		"dotdot":       "../x",
		"inner-dotdot": "a/../../b",
		"absolute":     "/etc/passwd",
		"backslash":    `..\..\x`,
		"empty-elem":   "a//b",
		"dot":          ".",
		"nul":          "a\x00b",
		"drive":        "C:/x",
		"unicode":      "ünïcode/файл",
		"trailing":     "a/",
	}
	if *updateCorpus {
		for name, b := range manifests {
			writeCorpus(t, "FuzzDecodeManifest", name, "[]byte("+strconv.Quote(string(b))+")")
		}
		for name, p := range paths {
			writeCorpus(t, "FuzzValidatePath", name, "string("+strconv.Quote(p)+")")
		}
	}
	for target, n := range map[string]int{"FuzzDecodeManifest": len(manifests), "FuzzValidatePath": len(paths)} {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", target))
		if err != nil {
			t.Fatalf("seed corpus for %s: %v (run go test -run TestSeedCorpus -update-corpus)", target, err)
		}
		if len(entries) < n {
			t.Errorf("seed corpus for %s has %d entries, want %d (run go test -run TestSeedCorpus -update-corpus)", target, len(entries), n)
		}
	}
}

func writeCorpus(t *testing.T, target, name, value string) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func corpusManifests() map[string][]byte {
	enc := func(mut func(m *artifact.Manifest), reseal bool) []byte {
		m := validManifest()
		if mut != nil {
			mut(m)
		}
		if reseal {
			m.Digest = artifact.ComputeDigest(m)
		}
		b, _ := m.Encode()
		return b
	}
	big := validManifest()
	big.Files = nil
	for i := range 50 {
		big.Files = append(big.Files, artifact.File{Path: fmt.Sprintf("member/wal/%016x.wal", i), Size: int64(i), SHA256: sha})
	}
	_ = big.Seal()
	bigb, _ := big.Encode()
	return map[string][]byte{
		"valid":            enc(nil, false),
		"valid-many-files": bigb,
		"digest-altered":   enc(func(m *artifact.Manifest) { m.Identity.Revision++ }, false),
		"dotdot":           enc(func(m *artifact.Manifest) { m.Files[0].Path = "../../x" }, true),
		"absolute":         enc(func(m *artifact.Manifest) { m.Files[0].Path = "/x" }, true),
		"duplicate":        enc(func(m *artifact.Manifest) { m.Files[1].Path = m.Files[0].Path }, true),
		"other-version":    []byte(`{"kind":"SeedGeneration","manifestVersion":2}`),
		"version-string":   []byte(`{"kind":"SeedGeneration","manifestVersion":"1"}`),
		"unknown-field":    []byte(strings.Replace(string(enc(nil, false)), `"kind"`, `"x":1,"kind"`, 1)),
		"trailing":         append(enc(nil, false), []byte("[]")...),
		"truncated":        enc(nil, false)[:200],
		"not-json":         []byte("\x00\xff manifest"),
		"null":             []byte("null"),
		"created-offset": enc(func(m *artifact.Manifest) {
			m.CreatedAt = m.CreatedAt.In(time.FixedZone("x", 3600))
		}, false),
	}
}
