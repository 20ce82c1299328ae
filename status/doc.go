// Package status observes HA clusters and reports on them: it reads the API
// server (with a constant number of list calls, or from the informer
// caches of a Watcher, which `status --watch` and the TUI share), probes
// every member on its own through its engine (Observer.Engines, handed
// in by the faces: engine/registry),
// decodes everything into model.Observation, runs the pure verdict, and
// prints the result as a table or as the versioned ClusterStatus schema
// (apiVersion hactl.dev/v1alpha1).
package status
