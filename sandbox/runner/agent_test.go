package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hactl-dev/hactl/agent"
)

// The runner's names for the capture binary are the agent's.
func TestCaptureNamesAreTheAgents(t *testing.T) {
	if CaptureCommand != agent.CaptureCommand || CaptureBuildTags != agent.CaptureBuildTags {
		t.Fatalf("runner: %q with tags %q; agent: %q with tags %q", CaptureCommand, CaptureBuildTags, agent.CaptureCommand, agent.CaptureBuildTags)
	}
}

// linkAgent puts both the agent and the hactl-capture beside it on the
// containers' PATH, under the names pods use, whatever the agent's file is
// called; the capture binary may appear later (the sandbox builds it).
func TestLinkAgentLinksTheCaptureBinaryBesideIt(t *testing.T) {
	src := t.TempDir()
	bin := filepath.Join(src, "my-hactl-build")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := linkAgent(bin, filepath.Join(t.TempDir(), "agent"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(filepath.Join(dir, AgentCommand)); err != nil || got != bin {
		t.Fatalf("%s links to %q (%v), want %s", AgentCommand, got, err, bin)
	}
	capture := filepath.Join(src, CaptureCommand)
	if got, err := os.Readlink(filepath.Join(dir, CaptureCommand)); err != nil || got != capture {
		t.Fatalf("%s links to %q (%v), want %s", CaptureCommand, got, err, capture)
	}
	if err := os.WriteFile(capture, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := lookPath(CaptureCommand, dir); err != nil || p != filepath.Join(dir, CaptureCommand) {
		t.Fatalf("lookPath(%s): %q, %v", CaptureCommand, p, err)
	}
}
