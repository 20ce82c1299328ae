// Package reap finds and ends the processes a sandbox started, reading
// /proc: pid files in the format sandbox/internal/proc writes ("<pid>
// <start time> <name>"), and whole sessions (a detached sandbox
// supervisor leads its own session, so every process it started, and
// every process those started, carries its session id even after the
// supervisor died). A process is identified by pid and kernel start time
// together, so a reused pid is never signalled.
package reap
