package command

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestScenariosListsEveryScenario(t *testing.T) {
	code, out, _ := run("scenarios")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, n := range scenario.Names() {
		if !strings.Contains(out, n+" (") {
			t.Errorf("scenario %s missing from:\n%s", n, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"unknown scenario":            {"up", "--dir", dir, "--scenario", "nope"},
		"unknown fault":               {"break", "--dir", dir, "etcd-0", "explode"},
		"flags for a fault without":   {"break", "--dir", dir, "etcd-0", "stop", "--", "--x=1"},
		"rebootstrap flag not a flag": {"break", "--dir", dir, "etcd-0", "rebootstrap", "--", "x=1"},
		"break without a fault":       {"break", "--dir", dir, "etcd-0"},
		"break with no sandbox":       {"break", "--dir", dir, "etcd-0", "stop"},
		"status with no sandbox":      {"status", "--dir", dir},
	} {
		if code, _, errOut := run(args...); code == 0 || !strings.HasPrefix(errOut, "error: ") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut)
		}
	}
}

func TestDownOnAnEmptyDirIsANoOp(t *testing.T) {
	dir := t.TempDir() + "/missing"
	if code, out, errOut := run("down", "--dir", dir); code != 0 || !strings.Contains(out, "is down") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}
