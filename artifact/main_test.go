package artifact_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact/storetest"
	"github.com/hactl-dev/hactl/internal/testbins"
)

// s3srv is the package's real S3 server (nil under -short).
var s3srv *storetest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	bin, err := testbins.Dir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "test binaries: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "hactl-artifact-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s3srv, err = storetest.Start(ctx, bin, dir)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting versitygw: %v\n", err)
		return 1
	}
	code := m.Run()
	stopAzurite()
	if err := s3srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	return code
}
