// Package patroni is hactl's Patroni engine (PostgreSQL managed by
// Patroni): it asks each member's REST API about itself, and offers the
// REST actions the repairs need (Switchover, Reinitialize).
//
// Every connection goes through an engine.DialFunc (a port-forward in
// production) to the target's pod and REST port; the URL's host is a
// placeholder that is never resolved, no proxy is used and redirects are
// not followed. The api_url and conn_url members advertise are pod IPs
// and are never dialled. Patroni 3.0.2 answers in HTTP/1.0 and closes the
// connection after each answer, so each request has a connection of its
// own; none outlives the call.
//
// Probe sends, per member and concurrently, GET /patroni (the member's own
// PostgreSQL, read by fresh SQL on every request) and GET /cluster (the
// member's view of its DCS). /patroni decides reachability: it answers 200
// or 503 with the same document, so any HTTP code with a Patroni status
// body is an answer. EngineFacts then holds the member's name (its pod:
// /patroni names no member in 3.0.2) as MemberID, the database system
// identifier as ClusterID, the leader its /cluster view names as LeaderID,
// the PostgreSQL version ("15.18") as Version, and the rest in
// EngineFacts.Patroni. WAL positions the member did not report stay nil:
// Patroni answers 200 without "xlog" (state "unknown") when its status
// query fails. A failed /cluster is reported in Patroni.ViewErr.
//
// Failures are classified as the etcd engine does: the deadline is a
// timeout; a failed dial, a refused connection or engine.ErrForward is a
// connect failure; a TLS handshake failure or HTTP 401/403 is a
// credentials failure; anything else is other.
//
// Patroni has no raft membership: Members returns operations that all
// fail with ErrNotApplicable. The repairs use Patroni's own REST actions
// instead, each over its own dialled connection: Switchover (POST
// /switchover, whose 412 is Patroni's built-in compare-and-swap on the
// leader's name: ErrPrecondition) and Reinitialize (POST /reinitialize,
// which the leader refuses: ErrIsLeader). A request written without an
// answer is engine.ErrOutcomeUnknown. Patroni's restapi.authentication
// guards these unsafe methods with basic auth: pass WithBasicAuth; a
// BasicAuth never prints, and refused credentials are ErrUnauthorized.
//
// Rules (verdict.go) are Patroni's verdict rules, pure over the
// observation: the one writable primary and its WAL position as the
// frontier, each replica's replay lag in bytes, the leader lock, and a
// primary and one failover candidate as what any disruption must leave.
// The faces hand them to the verdict through engine.Judged.
package patroni
