// Package etcdcluster runs a real N-member etcd cluster from the pinned
// etcd binary, on free ports of 127.0.0.1, for tier-3 tests and the
// sandbox: members can be stopped, killed, paused (SIGSTOP), resumed,
// wiped and restarted with other bootstrap flags, and learners can be
// added, so the failure modes hactl repairs can be produced for real.
//
// Every client this package builds dials only the endpoints it is given
// and never synchronises its endpoint list with the cluster, so a
// per-member client really talks to that one member.
//
// Layout under Options.Dir: data/<member>/ (data dirs), logs/<member>.log,
// pids/<member>.pid (for KillRecorded after a crash).
package etcdcluster
