// Package http is the engine for any highly-available store whose members
// each serve their state as an HTTP JSON status document (label
// hactl.dev/engine=http). The user declares a mapping, the data of a
// ConfigMap the StatefulSet names with the annotation
// hactl.dev/engine-config: where the document is served (port, path,
// method, body) and a JSONPath expression for each fact hactl reads
// (member and cluster identity, role, the leader a member follows,
// term, applied position, the leader's frontier, readiness).
//
// Its verdict rules (rules.go) apply the leader-frontier rule: a member's
// lag is the frontier read from the leader in the same round minus the
// member's applied position, and a member whose frontier cannot be read
// has an unknown lag, never 0. hactl observes such clusters; it has no
// fenced operations for them (actions are refused as action_unsupported).
// docs/engines.md describes the mapping, with examples for Patroni's
// GET /patroni and etcd's JSON gateway.
package http
