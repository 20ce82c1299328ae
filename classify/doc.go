// Package classify holds hactl's pure decision of what to do about one
// member or cluster for an action (Classify): the verb, the ordered plan, the fences
// of every delete and member removal, the quorum arithmetic, notes and the
// blockers with the flag that overrides each. The CLI, the TUI's confirm
// dialog and explain all call Classify; package actions executes the
// Decision it returns.
//
// Classify applies common gates to every engine (classify.go, gates.go,
// kube.go: freshness, the lock, the ledger, pod gates and fenced deletes)
// and hands the action itself to the rules of the cluster's engine: the
// model.ClassifyRules its package offers beside its verdict rules, handed
// in with the verdict's options (engine.go), which plan through the
// model.Plan the classifier is. etcd's rules (member list, learners,
// quorum of voters, the leader, the template's --initial-cluster and
// bootstrap shape, seed sources, restores) live in engine/etcd, Patroni's
// in engine/patroni; this package names no engine.
//
// It imports only the standard library and packages model and verdict: no
// client, no clock, no logging, so every rule is a table test.
package classify
