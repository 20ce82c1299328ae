// Package e2e holds the end-to-end tests of seed generations: the built
// kubectl-hactl binary, invoked through the real kubectl, against the
// sandbox (a real control plane, kwok, real etcd members reached through
// port-forward, versitygw as the S3 store). It has no code of its own.
package e2e
