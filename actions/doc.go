// Package actions executes the decisions of package classify against a
// real cluster (replace, reseed, restore and seed alike, through one
// Executor): it takes the cluster's lock through WithLock, the one lock
// sequence every changing command uses (a coordination.k8s.io Lease
// hactl-<cluster>, with resourceVersion preconditions, renewed while it
// works, released at the end; a stale holder is reported when taken over,
// never silently), re-observes and re-classifies before the first change
// and after every step, writes a typed receipt per step to the ledger (a
// ConfigMap hactl-<cluster> updated with optimistic concurrency) and a
// Kubernetes Event on the StatefulSet, deletes only with the decision's
// UID and resourceVersion preconditions, and on a conflict re-observes and
// re-decides rather than retrying the delete. Member operations go
// through the engine's engine.MemberOps; a seed's capture through the
// engine's seeding.Seeder (Executor.Seeders, handed in by the faces), into
// the cluster's store (OpenClusterStore).
//
// Because every step is chosen by the classifier from what is observed
// (and the ledger records what was replaced), running the same action
// again after a crash at any point resumes it and never deletes twice.
package actions
