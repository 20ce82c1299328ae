package krew

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/internal/testenv"
)

func TestDistManifestValidatesAndInstalls(t *testing.T) {
	testenv.SkipShort(t)
	bins := testenv.BinDir(t)
	dist := t.TempDir()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dist))}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	cmd := exec.Command("bash", "../hack/dist.sh")
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION=v0.1.0", "URL_BASE=http://"+ln.Addr().String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist.sh: %v\n%s", err, out)
	}
	manifest, err := os.ReadFile(filepath.Join(dist, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"os: linux", "os: darwin", "os: windows", "arch: amd64", "arch: arm64", "sha256: \"", "caveats:", "LICENSE"} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("manifest lacks %q", want)
		}
	}
	// krew wants the file named after the plugin.
	path := filepath.Join(t.TempDir(), "hactl.yaml")
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
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
	m := string(manifest)
	idx := strings.Index(m, "sha256: \"") + len("sha256: \"")
	flipped := m[:idx] + flip(m[idx]) + m[idx+1:]
	if err := os.WriteFile(path, []byte(flipped), 0o644); err != nil {
		t.Fatal(err)
	}
	v = exec.Command(filepath.Join(bins, "validate-krew-manifest"), "-manifest", path)
	v.Env = append(os.Environ(), "HOME="+t.TempDir(), "PATH="+bins+":"+os.Getenv("PATH"))
	if out, err := v.CombinedOutput(); err == nil {
		t.Fatalf("validator accepted a manifest with a wrong sha256:\n%s", out)
	}
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}
