// Package classify holds hactl's pure decisions: how a StatefulSet's pods
// bootstrap on an empty volume (DetectShape), and what to do about one
// member for an action (Classify): the verb, the ordered plan, the fences
// of every delete and member removal, the quorum arithmetic, notes and the
// blockers with the flag that overrides each. The CLI, the TUI's confirm
// dialog and explain all call Classify; package actions executes the
// Decision it returns.
//
// Classify applies common gates to every engine (classify.go, gates.go,
// kube.go: freshness, the lock, the ledger, pod gates and fenced deletes)
// and hands the action itself to the rules of the cluster's engine, an
// engineRules chosen from the engines registry (engine.go). etcd's rules
// (member list, learners, quorum of voters, the leader, the template's
// --initial-cluster and bootstrap shape, seed sources, restores) live in
// the etcd*.go files; another engine adds its own files and registry
// entry.
//
// It imports only the standard library and packages model and verdict: no
// client, no clock, no logging, so every rule is a table test.
package classify
