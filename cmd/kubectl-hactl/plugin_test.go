package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/internal/testenv"
)

// build compiles kubectl-hactl (stamped like a release) into a fresh
// directory and returns it, with kubectl_complete-hactl beside it.
func build(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ld := "-X github.com/hactl-dev/hactl/internal/buildinfo.Version=v9.8.7 -X github.com/hactl-dev/hactl/internal/buildinfo.Commit=abc1234"
	out, err := exec.Command("go", "build", "-ldflags", ld, "-o", filepath.Join(dir, "kubectl-hactl"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script, err := os.ReadFile("../../kubectl_complete-hactl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-hactl"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubectl runs the real kubectl with PATH holding only the plugin dir and
// the test binaries, and an empty kubeconfig unless one is given.
func kubectl(t *testing.T, pluginDir, kubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	bins := testenv.BinDir(t)
	if kubeconfig == "" {
		kubeconfig = filepath.Join(t.TempDir(), "empty")
	}
	cmd := exec.Command(filepath.Join(bins, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+":"+bins+":/usr/bin:/bin", "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestPluginDiscoveryThroughRealKubectl(t *testing.T) {
	testenv.SkipShort(t)
	dir := build(t)

	t.Run("plugin list shows it", func(t *testing.T) {
		out, errOut, code := kubectl(t, dir, "", "plugin", "list")
		if code != 0 || !strings.Contains(out, filepath.Join(dir, "kubectl-hactl")) {
			t.Fatalf("kubectl plugin list (exit %d):\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("version -o json", func(t *testing.T) {
		out, errOut, code := kubectl(t, dir, "", "hactl", "version", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var v struct{ Version, GitCommit string }
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if v.Version != "v9.8.7" || v.GitCommit != "abc1234" {
			t.Errorf("version = %+v, want the ldflags-stamped v9.8.7/abc1234", v)
		}
	})
	t.Run("kubectl connection flags are accepted", func(t *testing.T) {
		out, errOut, code := kubectl(t, dir, "", "hactl", "--context", "X", "-n", "Y", "--as", "someone", "--request-timeout", "5s", "version")
		if code != 0 || !strings.Contains(out, "v9.8.7") {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
	})
	t.Run("help shows kubectl flags and the plugin's name", func(t *testing.T) {
		out, _, code := kubectl(t, dir, "", "hactl", "--help")
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		for _, want := range []string{"kubectl hactl", "--kubeconfig", "--context", "--namespace", "--as", "--request-timeout", "status"} {
			if !strings.Contains(out, want) {
				t.Errorf("--help lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("plugin completion", func(t *testing.T) {
		out, errOut, code := kubectl(t, dir, "", "__complete", "hactl", "")
		if code != 0 || !strings.Contains(out, "status") || !strings.Contains(out, "version") {
			t.Fatalf("kubectl __complete hactl (exit %d):\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("usage error exits 2", func(t *testing.T) {
		_, errOut, code := kubectl(t, dir, "", "hactl", "status", "--color", "purple")
		if code != 2 || !strings.Contains(errOut, "--color") {
			t.Fatalf("exit %d, stderr %q; want 2 naming --color", code, errOut)
		}
	})
	t.Run("unreachable API server is a clear error, exit 1", func(t *testing.T) {
		kc := filepath.Join(t.TempDir(), "kc")
		cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: x}}]\ncurrent-context: c\n"
		if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := kubectl(t, dir, kc, "hactl", "status", "--request-timeout", "3s")
		if code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}
