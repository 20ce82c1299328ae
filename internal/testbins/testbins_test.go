package testbins

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRootFindsTheModule(t *testing.T) {
	t.Setenv(EnvRepoRoot, "")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "module github.com/hactl-dev/hactl\n"; string(b[:len(want)]) != want {
		t.Fatalf("go.mod at %s starts %q", root, b[:len(want)])
	}
}

func TestEnvDirMustExist(t *testing.T) {
	t.Setenv(EnvDir, filepath.Join(t.TempDir(), "missing"))
	if _, err := find(); err == nil {
		t.Fatal("find accepted a missing directory")
	}
}
