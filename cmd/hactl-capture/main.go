// Command hactl-capture is the capture binary of hactl's agent image: what
// a seed's one-shot capture pod runs (see package agent). It carries the
// etcd client and the store drivers and nothing of Kubernetes, so its
// process stays small next to the member it reads.
package main

import (
	"context"
	"os"

	"google.golang.org/grpc/experimental"

	"github.com/hactl-dev/hactl/agent"
)

func init() {
	// Only here: the pool is process-wide, and gRPC takes it only while
	// the program initialises.
	experimental.SetDefaultBufferPool(agent.ReceivePool())
}

func main() {
	os.Exit(agent.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
