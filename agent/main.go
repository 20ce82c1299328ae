package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/hactl-dev/hactl/internal/buildinfo"
)

// Main runs hactl-capture with args (without the program name) and
// returns its exit code: the capture's flags, plus --version and --help.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o := &CaptureOptions{Program: CaptureCommand, Getenv: getenv, Out: stdout, ErrOut: stderr}
	f := pflag.NewFlagSet(CaptureCommand, pflag.ContinueOnError)
	f.SetOutput(stderr)
	o.AddFlags(f)
	version := f.Bool("version", false, "Print the version and exit.")
	f.SortFlags = false
	f.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nAs built for hactl's agent image (make build) it carries the s3:// and\nfile:// store drivers only; kubectl-hactl agent capture has every driver.\n\nUsage:\n  %s --store URL --generation G --endpoint HOST:PORT [flags]\n\nFlags:\n%s", CaptureHelp, CaptureCommand, f.FlagUsages())
	}
	err := f.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return ExitOK
	case err != nil:
		fmt.Fprintf(stderr, "error: %v\nSee '%s --help'.\n", err, CaptureCommand)
		return ExitUsage
	case *version:
		fmt.Fprintf(stdout, "%s %s (commit %s, built %s, %s, %s/%s)\n", CaptureCommand, buildinfo.Version, buildinfo.Commit, buildinfo.Date,
			runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return ExitOK
	case f.NArg() > 0:
		err = usageError("unexpected arguments %q: every input is a flag", f.Args())
	default:
		if err = o.Validate(); err == nil {
			err = o.Run(ctx)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if code := ExitCode(err); code == ExitUsage {
			fmt.Fprintf(stderr, "See '%s --help'.\n", CaptureCommand)
		}
	}
	return ExitCode(err)
}
