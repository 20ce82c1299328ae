package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/sandbox"
	"github.com/hactl-dev/hactl/sandbox/command"
)

func main() {
	// Started by the sandbox's runner as a stand-in for one of
	// etcd-druid's images (etcd-wrapper, etcdbrctl) or for Spilo's
	// entrypoint?
	sandbox.StandInIfAsked()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(command.Run(streams, os.Args[1:]))
}
