// Package buildinfo carries the version stamped into the binary at link
// time (make build sets these with -ldflags -X).
package buildinfo

// Set by the linker; the defaults describe an unstamped development build.
var (
	Version = "v0.0.0-dev"
	Commit  = "unknown"
	Date    = "unknown"
)
