package e2esuite

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartRefusesWithoutASupervisor: a test binary whose TestMain does
// not serve the sandbox's supervisor must not be run as one (it would run
// its own tests instead).
func TestStartRefusesWithoutASupervisor(t *testing.T) {
	if serving {
		t.Fatal("this package's TestMain serves nothing: serving must be false")
	}
	_, err := Start(Options{})
	if err == nil || !strings.Contains(err.Error(), "does not serve the sandbox's supervisor") {
		t.Fatalf("Start = %v, want a refusal", err)
	}
}

// TestBuildTwice builds hactl-sandbox into two directories: each gets a
// working executable of its own (the second from the Go build cache).
func TestBuildTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("links a binary; skipped with -short")
	}
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing", "bin")} {
		if err := Build(dir, SandboxCommand); err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(dir, SandboxCommand)
		out, err := exec.Command(exe, "--help").CombinedOutput()
		if !strings.Contains(string(out), "hactl-sandbox") {
			t.Fatalf("%s --help: %v\n%s", exe, err, out)
		}
	}
}
