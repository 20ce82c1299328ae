// Package etcdgen makes and restores etcd seed generations.
//
// Capture streams a backend snapshot from one member (Maintenance.Snapshot
// through that member's own client, which in production goes through a
// port-forward) into an artifact.Upload, hashing while it uploads, and
// returns the identity to publish: the member's cluster ID, member ID,
// raft term and applied index, and the store revision read just before
// the stream began.
//
// Restorer is the artifact.Materializer for etcd: it turns a verified
// snapshot into a member data directory with etcd's own restore logic
// (go.etcd.io/etcd/etcdutl/v3/snapshot, as `etcdutl snapshot restore`
// does), then checks the result's integrity before it is activated.
// Restoring every member of a cluster from one generation, each with the
// same --initial-cluster and token, yields a new cluster with a new
// cluster ID: this is etcd's documented quorum-loss recovery.
package etcdgen
