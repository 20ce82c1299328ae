// Package pgadversarial runs several kubectl-hactl processes at once
// against one sandbox Patroni cluster (pg-healthy: three real Patroni 3.0.2
// + PostgreSQL 15 members): switchover, reseed and replace of the same and
// of different members, and apply of saved plans made with
// --dry-run=client -o json, while faults land at seeded random points:
// Patroni frozen on the primary (SIGSTOP), PostgreSQL crashed, a hactl
// process SIGKILLed and rerun or frozen past its lease, the primary role
// moved under an interrupted action by another operator, API requests
// delayed by a proxy. One kind of round reads the same cluster through the
// http engine (the shipped Patroni mapping, replace: recreate) and races
// its replaces the same way.
//
// After every round it checks, from observations of its own (each
// member's own PostgreSQL read with psql, each member's /patroni document
// read directly on its loopback address by a probe loop, the API server's
// audit log, Patroni's own log), that rows committed before the round are
// on every member, that hactl deleted no pod or volume of the member that
// was primary at that moment and sent no reinitialize to it, that every
// API write and every engine request came from the process the lock named
// at that moment, that every change has a receipt in the ledger and that
// every action ends (each ledger entry finished, or refused with a reason)
// within a bound. The checks are plain functions of those observations;
// checks_test.go plants a violation for each and shows it reported.
//
// The seed is printed; HACTL_PG_ADVERSARIAL_SEED replays it,
// HACTL_PG_ADVERSARIAL_ROUNDS runs more rounds and
// HACTL_PG_ADVERSARIAL_KINDS (a comma-separated list) only the kinds it
// names. The rounds are tier 4 and skipped with -short.
package pgadversarial
