// Package archtest holds tests that enforce the dependency direction of
// ARCHITECTURE.md: the pure packages (model, classify, verdict, engine)
// never import client-go, cobra or the charm libraries, and cli and tui
// never import each other.
package archtest
