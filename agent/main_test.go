package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/artifact/etcdgen"
)

// Main answers --help and --version and refuses a wrong command line with
// exit 2 and a message saying what is wrong, before it dials anything.
func TestMainCommandLine(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		code    int
		out     string // in stdout
		errText string // in stderr
	}{
		{"help", []string{"--help"}, nil, ExitOK, "", "Usage:\n  hactl-capture --store URL"},
		{"version", []string{"--version"}, nil, ExitOK, "hactl-capture v", ""},
		{"no store", []string{"--generation", "g1", "--endpoint", "m:2379"}, nil, ExitUsage, "", "--store is required (or set HACTL_SEED_STORE)"},
		{"store from env, no endpoint", []string{"--generation", "g1"}, map[string]string{EnvStore: "s3://b/p"}, ExitUsage, "", "--endpoint is required"},
		{"bad endpoint", []string{"--store", "s3://b/p", "--generation", "g1", "--endpoint", "m"}, nil, ExitUsage, "", `--endpoint "m" is not host:port`},
		{"bad generation", []string{"--store", "s3://b/p", "--generation", "../x", "--endpoint", "m:1"}, nil, ExitUsage, "", "--generation:"},
		{"bad output", []string{"--store", "s3://b/p", "--generation", "g1", "--endpoint", "m:1", "-o", "yaml"}, nil, ExitUsage, "", "--output must be json"},
		{"unknown flag", []string{"--stor", "x"}, nil, ExitUsage, "", "unknown flag: --stor"},
		{"arguments", []string{"--store", "s3://b/p", "--generation", "g1", "--endpoint", "m:1", "extra"}, nil, ExitUsage, "", "unexpected arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env = c.env
			var out, errOut bytes.Buffer
			code := Main(context.Background(), c.args, getenv, &out, &errOut)
			if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.errText) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, %q in stdout, %q in stderr", code, out.String(), errOut.String(), c.code, c.out, c.errText)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	for err, want := range map[error]int{
		nil:                                   ExitOK,
		errors.New("dial: refused"):           ExitError,
		usageError("bad"):                     ExitUsage,
		fmt.Errorf("x: %w", &UsageError{"y"}): ExitUsage,
		fmt.Errorf("member 2: %w", etcdgen.ErrSourceChanged): ExitRefused,
	} {
		if got := ExitCode(err); got != want {
			t.Errorf("ExitCode(%v) = %d, want %d", err, got, want)
		}
	}
}

// The release build of hactl-capture (make build, make image) uses the
// tags the tests and the sandbox build it with.
func TestMakefileBuildsWithTheCaptureTags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var flags string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CAPTURE_BUILDFLAGS = "); ok {
			flags = v
		}
	}
	tags := ""
	if f := strings.Fields(flags); slices.Index(f, "-tags") >= 0 && slices.Index(f, "-tags")+1 < len(f) {
		tags = f[slices.Index(f, "-tags")+1]
	}
	if !slices.Contains(strings.Split(tags, ","), CaptureBuildTags) {
		t.Fatalf("the Makefile's CAPTURE_BUILDFLAGS %q lack the tag %s", flags, CaptureBuildTags)
	}
	if n := strings.Count(string(b), "$(CAPTURE_BUILDFLAGS)"); n < 2 || strings.Contains(string(b), "$(BUILDFLAGS) -ldflags \"$(LDFLAGS)\" -o bin/hactl-capture") {
		t.Fatalf("hactl-capture is not built with CAPTURE_BUILDFLAGS everywhere (%d uses)", n)
	}
}
