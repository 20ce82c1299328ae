// Package classify holds hactl's pure decisions: how a StatefulSet's pods
// bootstrap on an empty volume (DetectShape), and what to do about one
// member for an action (Classify): the verb, the ordered plan, the fences
// of every delete and member removal, the quorum arithmetic, notes and the
// blockers with the flag that overrides each. The CLI, the TUI's confirm
// dialog and explain all call Classify; package actions executes the
// Decision it returns.
//
// It imports only the standard library and packages model and verdict: no
// client, no clock, no logging, so every rule is a table test.
package classify
