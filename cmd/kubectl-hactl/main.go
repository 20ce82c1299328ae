// Command kubectl-hactl is the hactl kubectl plugin: `kubectl hactl`.
package main

import (
	"os"

	"github.com/hactl-dev/hactl/cli"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(cli.Run(streams, os.Args[1:]))
}
