package testbins

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

const (
	// EnvDir, when set, names the binaries directory and skips the build
	// script.
	EnvDir = "HACTL_TESTBINS_DIR"
	// EnvRepoRoot, when set, names the repository root (where
	// hack/testbins.sh lives) instead of searching upwards for go.mod.
	EnvRepoRoot = "HACTL_REPO_ROOT"

	script = "hack/testbins.sh"
)

// dir caches the script's answer for the life of the process: the script
// takes a lock and may build for minutes, so it runs at most once.
var dir = sync.OnceValues(find)

// Dir returns the directory holding the test binaries, running
// hack/testbins.sh (whose progress goes to os.Stderr) the first time it is
// called in a process unless HACTL_TESTBINS_DIR is set.
func Dir() (string, error) { return dir() }

func find() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s=%s is not a directory", EnvDir, d)
		}
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, script))
	cmd.Dir = root
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("running %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	d := strings.TrimSpace(lines[len(lines)-1])
	if d == "" {
		return "", fmt.Errorf("%s printed no directory", script)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s printed %q, which is not a directory", script, d)
	}
	return d, nil
}

// RepoRoot returns HACTL_REPO_ROOT if set, else the nearest directory at
// or above the working directory that holds both go.mod and
// hack/testbins.sh.
func RepoRoot() (string, error) {
	if r := os.Getenv(EnvRepoRoot); r != "" {
		return filepath.Abs(r)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if exists(filepath.Join(d, "go.mod")) && exists(filepath.Join(d, script)) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("repository root not found above " + wd + " (set " + EnvRepoRoot + ")")
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
