package engine

import (
	"errors"
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

// ErrNoKeyPair: TLS material without a client certificate and key.
var ErrNoKeyPair = errors.New("no tls.crt/tls.key pair")

// CredentialsFromKeys picks client TLS material out of a Secret's data (or
// the files of a mounted Secret, by name): the certificate from tls.crt,
// cert.pem or client.crt, the key from tls.key, key.pem or client.key, the
// CA bundle from ca.crt or ca.pem, each the first key present. Without a
// certificate and a key it returns ErrNoKeyPair.
func CredentialsFromKeys(data map[string][]byte) (*Credentials, error) {
	pick := func(keys ...string) []byte {
		for _, k := range keys {
			if v, ok := data[k]; ok {
				return v
			}
		}
		return nil
	}
	cr := &Credentials{
		CertPEM: pick(CredentialKeys.Cert...),
		KeyPEM:  pick(CredentialKeys.Key...),
		CAPEM:   pick(CredentialKeys.CA...),
	}
	if len(cr.CertPEM) == 0 || len(cr.KeyPEM) == 0 {
		return nil, ErrNoKeyPair
	}
	return cr, nil
}

// CredentialKeys are the key names CredentialsFromKeys reads, in order of
// preference.
var CredentialKeys = struct{ Cert, Key, CA []string }{
	Cert: []string{"tls.crt", "cert.pem", "client.crt"},
	Key:  []string{"tls.key", "key.pem", "client.key"},
	CA:   []string{"ca.crt", "ca.pem"},
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
