package engine

import (
	"fmt"
	"io"
	"log/slog"
)

// Credentials are client TLS material read from a Secret reference. They
// are never printed: every formatting path (fmt verbs, JSON, slog) yields
// "[redacted]". Keep them out of errors too: engines report which file or
// step failed, never the bytes.
type Credentials struct {
	// CertPEM and KeyPEM are the client certificate and key (both or
	// neither). CAPEM is the bundle that verifies the members' serving
	// certificates; empty means the system roots.
	CertPEM, KeyPEM, CAPEM []byte
	// ServerName overrides the name the serving certificate is checked
	// against, for every member (see Target.ServerName).
	ServerName string
}

const redacted = "[redacted]"

// String implements fmt.Stringer.
func (Credentials) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v).
func (Credentials) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb, %v, %+v, %#v, %s,
// %x and %q included, prints "[redacted]".
func (Credentials) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON keeps the PEM out of JSON output.
func (Credentials) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// LogValue keeps the PEM out of structured logs.
func (Credentials) LogValue() slog.Value { return slog.StringValue(redacted) }

// BasicAuth is a username and password read from a Secret reference (for
// Patroni, what its restapi.authentication asks for on unsafe methods).
// It is never printed: every formatting path (fmt verbs, JSON, slog)
// yields "[redacted]", and no error carries it.
type BasicAuth struct {
	Username, Password string
}

// String implements fmt.Stringer.
func (BasicAuth) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v).
func (BasicAuth) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb prints "[redacted]".
func (BasicAuth) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON keeps the password out of JSON output.
func (BasicAuth) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// LogValue keeps the password out of structured logs.
func (BasicAuth) LogValue() slog.Value { return slog.StringValue(redacted) }
