// Package archtest holds the tests that keep the code to the picture in
// docs/architecture.md: every arrow between hactl's packages is allowed
// by a table or the test fails (tui never imports cli, status and engine
// never import actions, no product package imports test support), and
// the pure packages (model, verdict, classify, engine) reach no framework
// (client-go, cobra, charm, grpc) and do no I/O. A test of the test adds
// a forbidden import through go list's overlay and checks that it is
// reported.
package archtest
