// Package etcdgen makes etcd seed generations.
//
// Capture streams a backend snapshot from one member (Maintenance.Snapshot
// through that member's own client, which in production goes through a
// port-forward) into an artifact.Upload, hashing while it uploads, and
// returns the identity to publish: the member's cluster ID, member ID,
// raft term and applied index, and the store revision read just before
// the stream began.
//
// The restore half (Restorer, with etcd's restore logic and its server
// packages) is etcdgen/etcdrestore, so that the capture binary carries
// none of it.
package etcdgen
