// Package testbins locates the pinned binaries that hactl's tests and
// sandbox run against (etcd, kube-apiserver, kwok, ...). Dir builds them
// through hack/testbins.sh on first use (a one-time cost of minutes,
// cached across runs) and returns the directory holding them.
package testbins
