// Package verdict turns one model.Observation into the two answers hactl
// exists for — is the cluster control-ready (it works now) and is it
// failover-ready (losing any one member would be survivable) — each
// shortfall explained by a stable reason code (docs/reason-codes.md).
//
// It is pure: a function of plain values and of the `now` it is given. It
// imports only the standard library and package model.
//
//	Analyze(obs, now, opts)  cluster-wide derived facts: the reference
//	                         cluster ID and member list, voters, quorum,
//	                         the agreed leader and its frontier
//	Derive(obs, now, opts)   a copy of obs whose members carry Phase and Lag
//	Compute(obs, now, opts)  the model.Verdict
//	Evaluate(obs, now, opts) Derive and Compute together
//	EvaluateAll(obs, now, opts)
//	                         Evaluate and Analyze in one pass
//
// The verdict runs the checks every engine shares (freshness, pods, client
// endpoints, serving certificates, and the disruption budget and node
// spread against the tolerance the engine reports); each engine's own
// rules — phases, lag, identity, the leader — live in the engine's
// package and are handed in as a model.VerdictRules (Options.Rules). The
// verdict names no engine: a cluster whose engine's rules were not handed
// in is engine_unsupported.
//
// Phases and lag are always derived from what was observed, never
// remembered (seed 000), and lag is only ever measured against a real
// leader frontier read from the leader itself in the same round (etcd's
// raft index, Patroni's primary's WAL position). Without one, Lag stays
// nil and the member is reported lag_unknown, never "caught up" (seed
// 002).
//
// Without engine probes (Observation.EngineProbed false) the verdict uses
// what Kubernetes alone proves: control_ready can hold, but every running
// member is reported lag_unknown, so the cluster is never failover-ready.
package verdict
