// Package proc supervises the local server processes the sandbox runs
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, ...).
//
// Each process runs in its own process group, writes its output to a log
// file, and is recorded in a pid file (pid plus kernel start time) so that
// KillRecorded can clean up after the supervising process crashed without
// ever signalling an unrelated process that reused the pid. Unless
// detached, processes also receive SIGKILL if the supervising process dies
// (Linux parent-death signal), so a crashed test binary leaves nothing
// running. The kernel ties that signal to the OS thread that started the
// process: do not start processes from a goroutine that called
// runtime.LockOSThread and may exit.
//
// The package is Linux-only in practice: the pid identity check reads
// /proc.
package proc
