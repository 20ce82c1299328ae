// Package adversarial runs several kubectl-hactl processes at once against
// one sandbox cluster (replace of the same and of different members,
// restore, generations gc) while faults land at seeded random points:
// members killed or frozen, a hactl process SIGKILLed and rerun or frozen
// past its lease, API requests delayed by a proxy. After every round it
// checks, from observations of its own (a probe loop reading each member
// alone, the API server's audit log, the members' list), that quorum held,
// that only the lock holder changed anything, that every deleted object
// was in a plan shown, that the sentinel key survived on every member and
// that the ledger has a receipt for every change. The seed is printed;
// HACTL_ADVERSARIAL_SEED replays it, HACTL_ADVERSARIAL_ROUNDS runs more
// rounds. The tests are tier 4 and skipped with -short.
package adversarial
