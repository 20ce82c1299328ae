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
	"strings"
	"testing"

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

// TestDistManifestValidatesAndInstalls builds the release archives once
// and checks them three ways: the committed top-level plugin.yaml is
// exactly what `make dist` renders from krew/plugin.yaml.tmpl (sums
// included: the archives are reproducible), the linux/amd64 archive and
// binary are within the size bounds, and krew's validator installs every
// platform from the archives (served locally) and refuses a wrong sum.
func TestDistManifestValidatesAndInstalls(t *testing.T) {
	testenv.SkipShort(t)
	bins := testenv.BinDir(t)
	dist := t.TempDir()

	cmd := exec.Command("bash", "../hack/dist.sh")
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION=v0.1.0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist.sh: %v\n%s", err, out)
	}
	manifest, err := os.ReadFile(filepath.Join(dist, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"os: linux", "os: darwin", "os: windows", "arch: amd64", "arch: arm64", "sha256: \"", "caveats:", "LICENSE", releaseURLBase} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("manifest lacks %q", want)
		}
	}
	t.Run("top-level plugin.yaml is make dist's", func(t *testing.T) {
		committed, err := os.ReadFile("../plugin.yaml")
		if err != nil {
			t.Fatalf("the top-level plugin.yaml (krew's manifest) is missing: %v; run make manifest", err)
		}
		if line, ok := firstDiff(string(committed), string(manifest)); !ok {
			t.Errorf("plugin.yaml differs from what make dist renders (line %d: %s); run make manifest and commit it", line.n, line.text)
		}
	})
	t.Run("size", func(t *testing.T) {
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
		t.Fatalf("validate-krew-manifest (installs every platform from the local archives): %v\n%s", err, out)
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
