// Package etcd is hactl's etcd engine: it asks each etcd member about
// itself over its own single-endpoint clientv3 client, and offers the few
// member operations the repair actions need.
//
// Every connection goes through an engine.DialFunc (a port-forward in
// production); the gRPC target is a placeholder that is never resolved.
// Endpoint auto-sync is never enabled: members advertise their real client
// URLs, and a client that followed them would leave the tunnel and, worse,
// blend several members' answers into one.
//
// Probe reads, per member: Status (leader, raft term/index/applied,
// learner flag, DB size and quota, version, storage version, errors, and
// the active alarms, which etcd lists among the errors), the response
// header's cluster and member IDs (hex, as etcdctl prints them) and a
// serializable member list (answered locally, so a member without quorum,
// or one that formed a cluster of its own, still reports its view). A
// learner serves Status only; its peers are then reported as unknown
// (EngineFacts.PeersErr). Probe never calls the alarm RPC: etcd answers it
// through a raft proposal, so a read-only status check would write to the
// log on every probe (Client.AlarmList is there for the actions).
//
// Rules (verdict.go) are etcd's verdict rules, pure over the observation:
// the reference cluster ID and member list, quorum, the agreed leader and
// its raft index as the frontier, each member's raft lag and phase. The
// faces hand them to the verdict through engine.Judged.
//
// Importing this package replaces gRPC's process-wide logger with a silent
// one (unless GRPC_GO_LOG_SEVERITY_LEVEL or ETCD_CLIENT_DEBUG is set), and
// every client it builds uses a no-op zap logger: a library must not write
// to the terminal a TUI is drawing on.
package etcd
