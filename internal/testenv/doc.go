// Package testenv gives tests the real components TESTING.md asks for:
// a control plane per test or per package (Main), an etcd cluster, a
// restricted RBAC user, and deadline-bounded polling. Every helper that
// starts processes stops them in t.Cleanup and fails the test if any
// process that mentions its directory is still alive afterwards.
//
// These are tier-2 and tier-3 helpers: under -short they skip the test.
package testenv
