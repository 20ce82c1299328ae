// Package tui is hactl's live view, a Bubble Tea (v2) program: every
// cluster in scope, one cluster's members with the verdict, each reason's
// remedy and recent events, the seed-phase view (generations, running and
// recorded actions with their receipts), the readiness view (lag against
// the leader frontier over time, learners' catch-up), and repairs through
// confirm dialogs that show the classifier's decision exactly as the CLI
// prints it. The action keys are r (replace the selected member), R
// (reseed it), s (seed a generation) and T (restore every member from a
// seed generation, picked from the cluster's published ones, newest
// first); x explains a decision without acting. A destructive decision
// is confirmed by typing the member's name, a restore by typing the
// cluster's.
//
// Data comes from a Backend: KubeBackend watches the API server through
// status.Watcher (the watcher `status --watch` uses) and probes members through
// status.Observer. Watch events become a stream of messages (a Cmd reads
// one notification and is issued again), a burst of them becomes one
// re-read of the caches, which the watcher judges with the members' last
// answers (the view evaluates no verdict of its own); members are probed
// every probe interval by a tick. All I/O happens in tea.Cmds; Update and
// View only compute.
//
// Actions go through the Actions interface (ExecutorActions wraps the
// actions executor the CLI verbs use); Generations lists seed generations.
// Run starts the program, with klog routed away from the terminal.
//
// The root Model routes: it hands the window size to the views (SetSize),
// handles the global keys (quit, help, filter, probe, switching screens
// and tabs), decides which view has the focus, and keeps the action flow
// (actions.go). The backend plumbing (the watches' sync and events, the
// cache reads, the probe rounds and the results, lag history and leader
// log they bring) is the feed's (internal/feed): the root hands it the
// feed's messages and shows what it reports (new results, a status line to
// set or clear). The views are components, each a package under
// components/ with its own state, Update, View, SetSize and SetTheme:
// clusters (the clusters screen), a cluster's members, seed, readiness and
// timeline (history) tabs, the table they list with, the confirm dialog
// (with the picker a restore picks its generation in) and the help. What
// they share (the Theme, the KeyMap, the text helpers, the engines' views,
// the lag history, the requests and the running action) is
// internal/common; a component, and the feed, never imports this package.
// Before each frame and after each message the root hands every view the
// data it shows (syncViews); the dialog's Update returns a dialog.Outcome
// that tells the root to close it, classify its request or run its
// decision.
package tui
