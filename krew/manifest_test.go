package krew

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/internal/testenv"
)

// releaseURLBase is where hack/dist.sh points the manifest by default.
const releaseURLBase = "https://github.com/hactl-dev/hactl/releases/download/v0.1.0"

// Size bounds of a release (linux/amd64): what a krew user downloads and
// what lands on their disk. docs/size.md has the breakdown.
const (
	maxArchiveBytes = 20_000_000
	maxBinaryBytes  = 80_000_000
)

// platforms are the platforms a release is built for (hack/dist.sh).
var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// TestDistManifestValidatesAndInstalls builds this machine's release
// archive and checks the committed plugin.yaml against it three ways: the
// manifest is exactly what `make dist` renders from krew/plugin.yaml.tmpl
// outside the platform list, this platform's entry (its sha256 included:
// the archives are reproducible) is exactly the rebuilt archive's, and
// every release platform has a complete entry; the linux/amd64 archive and
// binary are within the size bounds; krew's validator installs the
// archive (served locally) and refuses a wrong sum.
//
// The other platforms' archives are cross-built by `make dist` and
// `make manifest`, not here (on a fresh machine they cost a quarter of
// an hour of CI): a change to the code changes this platform's sum too,
// so a plugin.yaml not rendered again fails here.
func TestDistManifestValidatesAndInstalls(t *testing.T) {
	testenv.SkipShort(t)
	host := runtime.GOOS + "/" + runtime.GOARCH
	if !slices.Contains(platforms, host) {
		t.Skipf("no release is built for %s", host)
	}
	bins := testenv.BinDir(t)
	dist := t.TempDir()

	cmd := exec.Command("bash", "../hack/dist.sh")
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION=v0.1.0", "PLATFORMS="+host)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist.sh: %v\n%s", err, out)
	}
	manifest, err := os.ReadFile(filepath.Join(dist, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"os: " + runtime.GOOS, "arch: " + runtime.GOARCH, "sha256: \"", "caveats:", "LICENSE", "kubectl_complete-hactl", releaseURLBase} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("manifest lacks %q", want)
		}
	}
	t.Run("top-level plugin.yaml is make dist's", func(t *testing.T) {
		committed, err := os.ReadFile("../plugin.yaml")
		if err != nil {
			t.Fatalf("the top-level plugin.yaml (krew's manifest) is missing: %v; run make manifest", err)
		}
		checkCommitted(t, string(committed), string(manifest), host)
	})
	t.Run("size", func(t *testing.T) {
		if host != "linux/amd64" {
			t.Skipf("the size bounds are for linux/amd64; this is %s", host)
		}
		checkSize(t, filepath.Join(dist, "kubectl-hactl_v0.1.0_linux_amd64.tar.gz"))
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dist))}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	local := strings.ReplaceAll(string(manifest), releaseURLBase, "http://"+ln.Addr().String())

	// krew wants the file named after the plugin.
	path := filepath.Join(t.TempDir(), "hactl.yaml")
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	v := exec.Command(filepath.Join(bins, "validate-krew-manifest"), "-manifest", path)
	v.Env = append(os.Environ(), "HOME="+t.TempDir(), "PATH="+bins+":"+os.Getenv("PATH"))
	out, err := v.CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest (installs %s from the local archive): %v\n%s", host, err, out)
	}
	t.Logf("%s", out)

	// A tampered checksum must fail: the validator really checks archives.
	idx := strings.Index(local, "sha256: \"") + len("sha256: \"")
	flipped := local[:idx] + flip(local[idx]) + local[idx+1:]
	if err := os.WriteFile(path, []byte(flipped), 0o644); err != nil {
		t.Fatal(err)
	}
	v = exec.Command(filepath.Join(bins, "validate-krew-manifest"), "-manifest", path)
	v.Env = append(os.Environ(), "HOME="+t.TempDir(), "PATH="+bins+":"+os.Getenv("PATH"))
	if out, err := v.CombinedOutput(); err == nil {
		t.Fatalf("validator accepted a manifest with a wrong sha256:\n%s", out)
	}
}

// manifestDoc is the part of a krew manifest the checks read.
type manifestDoc struct {
	Spec struct {
		ShortDescription string          `json:"shortDescription"`
		Platforms        []platformEntry `json:"platforms"`
	} `json:"spec"`
}

type platformEntry struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	Sha256 string `json:"sha256"`
	Bin    string `json:"bin"`
	Files  []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
}

func (p platformEntry) platform() string {
	return p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
}

// checkCommitted compares the committed manifest with the one rendered
// for host alone: the text outside the platform list, host's entry, and
// a complete entry for every release platform.
func checkCommitted(t *testing.T, committed, rendered, host string) {
	t.Helper()
	head := func(m string) string {
		if i := strings.Index(m, "\n  platforms:\n"); i >= 0 {
			return m[:i]
		}
		return m
	}
	if line, ok := firstDiff(head(committed), head(rendered)); !ok {
		t.Errorf("plugin.yaml differs from what make dist renders (line %d: %s); run make manifest and commit it", line.n, line.text)
	}
	var c, r manifestDoc
	if err := yaml.Unmarshal([]byte(committed), &c); err != nil {
		t.Fatalf("plugin.yaml: %v", err)
	}
	if err := yaml.Unmarshal([]byte(rendered), &r); err != nil || len(r.Spec.Platforms) != 1 {
		t.Fatalf("rendered manifest: %v, %d platforms", err, len(r.Spec.Platforms))
	}
	if n := len(c.Spec.ShortDescription); n > 50 {
		t.Errorf("shortDescription is %d characters; krew-index asks for at most 50", n)
	}
	byPlatform := map[string]platformEntry{}
	var order []string
	for _, p := range c.Spec.Platforms {
		byPlatform[p.platform()] = p
		order = append(order, p.platform())
	}
	if !slices.Equal(order, platforms) {
		t.Errorf("plugin.yaml lists the platforms %v, make dist renders %v; run make manifest", order, platforms)
	}
	for _, want := range platforms {
		p, ok := byPlatform[want]
		if !ok {
			t.Errorf("plugin.yaml has no entry for %s; run make manifest", want)
			continue
		}
		if len(p.Sha256) != 64 || strings.Trim(p.Sha256, "0123456789abcdef") != "" || !strings.HasPrefix(p.URI, releaseURLBase+"/kubectl-hactl_v0.1.0_"+strings.ReplaceAll(want, "/", "_")) || len(p.Files) != 3 {
			t.Errorf("plugin.yaml's %s entry is incomplete: %+v", want, p)
		}
	}
	if got, want := byPlatform[host], r.Spec.Platforms[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("plugin.yaml's %s entry differs from the rebuilt archive's (sha256 %s, rebuilt %s): the code changed since make manifest; run it and commit plugin.yaml", host, got.Sha256, want.Sha256)
	}
}

type diffLine struct {
	n    int
	text string
}

// firstDiff finds the first line where a and b differ.
func firstDiff(a, b string) (diffLine, bool) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return diffLine{i + 1, fmt.Sprintf("committed %q, rendered %q", x, y)}, false
		}
	}
	return diffLine{}, true
}

// checkSize holds the linux/amd64 release to its bounds: the archive as
// krew downloads it, and the binary in it.
func checkSize(t *testing.T, archive string) {
	fi, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var bin int64 = -1
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if path.Base(h.Name) == "kubectl-hactl" {
			bin = h.Size
		}
	}
	t.Logf("linux/amd64: archive %d bytes (bound %d), binary %d bytes (bound %d)", fi.Size(), maxArchiveBytes, bin, maxBinaryBytes)
	if bin < 0 {
		t.Fatalf("%s holds no kubectl-hactl", archive)
	}
	if fi.Size() > maxArchiveBytes {
		t.Errorf("the krew archive is %d bytes, over the bound of %d (see docs/size.md)", fi.Size(), maxArchiveBytes)
	}
	if bin > maxBinaryBytes {
		t.Errorf("the binary is %d bytes, over the bound of %d (see docs/size.md)", bin, maxBinaryBytes)
	}
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}
