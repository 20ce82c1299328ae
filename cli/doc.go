// Package cli holds hactl's cobra commands: one file per verb, each with an
// XOptions struct following kubectl's Complete → Validate → Run pattern.
// The root command carries every standard kubectl connection flag through
// cli-runtime's ConfigFlags, because kubectl plugins do not inherit them.
package cli
