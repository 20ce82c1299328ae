// Package cli holds hactl's cobra commands: one file per verb, each with an
// XOptions struct following kubectl's Complete → Validate → Run pattern.
// The root command carries every standard kubectl connection flag
// (internal/kubeflags, as cli-runtime's ConfigFlags binds them), because
// kubectl plugins do not inherit them.
package cli
