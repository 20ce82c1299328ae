// Package e2e holds hactl's end-to-end tests: the built kubectl-hactl,
// found by the real kubectl through plugin discovery, against the sandbox
// (a real control plane, kwok nodes and real etcd members reached through
// kwok port-forwards), with the production port-forward dialer.
package e2e
