// Package e2e holds the end-to-end tests of replace and reseed: the
// sandbox (API server, controller-manager, kwok, real etcd members behind
// kwok's port-forward), the built kubectl-hactl binary invoked through the
// real kubectl, a sentinel key read back from every member on its own,
// fence conflicts in a terminal (tmux), concurrent runs and SIGKILL at
// every step. The tests are tier 4 and skipped with -short.
package e2e
