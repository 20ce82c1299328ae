// Package tui is hactl's live view, a Bubble Tea (v2) program: every
// cluster in scope, one cluster's members with the verdict, each reason's
// remedy and recent events, the seed-phase view (generations, running and
// recorded actions with their receipts), the readiness view (lag against
// the leader frontier over time, learners' catch-up), and repairs through
// confirm dialogs that show the classifier's decision exactly as the CLI
// prints it.
//
// Data comes from a Backend: KubeBackend watches the API server with
// informers (status.CacheSource) and probes members through
// status.Observer. Watch events become a stream of messages (a Cmd reads
// one notification and is issued again), a burst of them becomes one
// re-read of the caches, grafted with the last probe's engine facts;
// members are probed every probe interval by a tick. All I/O happens in
// tea.Cmds; Update and View only compute.
//
// Actions go through the Actions interface (ExecutorActions wraps the
// actions executor the CLI verbs use); Generations lists seed generations.
// Run starts the program, with klog routed away from the terminal.
//
// The root Model routes window sizes, global keys (quit, help, filter,
// probe) and focus; the screens (clusters, and a cluster's members, seed
// phase and readiness tabs) and the dialog handle the rest.
package tui
