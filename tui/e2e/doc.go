// Package e2e drives the real kubectl-hactl binary's TUI in tmux: against
// a real API server with fixture clusters, and against the sandbox (real
// etcd members behind kwok port-forwards) for the repair flow and the idle
// CPU measurement. It holds tests only.
package e2e
