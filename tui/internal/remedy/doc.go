// Package remedy gives the TUI the explanation and the fix of every reason
// code, read from an embedded copy of docs/reason-codes.md so the screen
// says exactly what the documentation says. A test keeps the copy equal to
// the document; `go generate` refreshes it.
package remedy

//go:generate cp ../../../docs/reason-codes.md reason-codes.md
