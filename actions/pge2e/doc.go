// Package pge2e holds the end-to-end tests of the Patroni actions (reseed,
// replace, switchover) against real Patroni members: the sandbox's
// pg-healthy scenario (API server, controller-manager, kwok, and three
// real PostgreSQL + Patroni members run by the sandbox's member runner).
//
// The executor is driven in-process with a dialer that reaches each
// member's own loopback address (the sandbox's member table), so that
// every member is read on its own; rows written through the primary are
// read back from every member with psql on that member's address. The
// tests are tier 4 and skipped with -short.
package pge2e
