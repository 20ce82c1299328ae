package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/sandbox/command"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(command.Run(streams, os.Args[1:]))
}
