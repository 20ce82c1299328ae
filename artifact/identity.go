package artifact

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hactl-dev/hactl/model"
)

// Identity is what a generation holds and where it came from. Two
// publications of one generation ID are the same generation exactly when
// their identities are equal.
type Identity struct {
	// Generation is the operator-chosen generation ID.
	Generation string `json:"generation"`
	// Engine and EngineVersion name the engine and the data format
	// version (for etcd, the storage version the snapshot reported).
	Engine        model.Engine `json:"engine"`
	EngineVersion string       `json:"engineVersion"`
	// ClusterID is the engine's cluster ID (hex for etcd).
	ClusterID string `json:"clusterID"`
	// SourceMemberID is the engine member the data was taken from.
	SourceMemberID string `json:"sourceMemberID"`
	// RaftTerm and RaftIndex are the source member's term and applied
	// index when the capture began.
	RaftTerm  uint64 `json:"raftTerm"`
	RaftIndex uint64 `json:"raftIndex"`
	// Revision is the store revision when the capture began: the
	// generation holds at least this revision (its boundary).
	Revision int64 `json:"revision"`
}

// Validate checks that every field is present and printable.
func (id Identity) Validate() error {
	if err := ValidateGeneration(id.Generation); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"engine", string(id.Engine)},
		{"engineVersion", id.EngineVersion},
		{"clusterID", id.ClusterID},
		{"sourceMemberID", id.SourceMemberID},
	} {
		if f.v == "" {
			return fmt.Errorf("%w: identity.%s is empty", ErrManifestInvalid, f.name)
		}
		if err := checkText(f.name, f.v, 128); err != nil {
			return err
		}
	}
	if id.Revision < 0 {
		return fmt.Errorf("%w: identity.revision is negative", ErrManifestInvalid)
	}
	return nil
}

// Source says, for people, where a generation was captured. It is covered
// by the manifest's digest but is not part of the identity.
type Source struct {
	Namespace string `json:"namespace,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Member    string `json:"member,omitempty"`
	// UID is the source StatefulSet's UID: it tells two same-named
	// clusters (two Kubernetes clusters sharing a store) apart. Empty in
	// generations written before it was recorded.
	UID string `json:"statefulSetUID,omitempty"`
}

func (s Source) validate() error {
	for _, f := range []struct{ name, v string }{{"namespace", s.Namespace}, {"cluster", s.Cluster}, {"member", s.Member}, {"statefulSetUID", s.UID}} {
		if err := checkText("source."+f.name, f.v, 253); err != nil {
			return err
		}
	}
	return nil
}

// maxGenerationLen bounds a generation ID.
const maxGenerationLen = 63

// ValidateGeneration checks a generation ID: 1 to 63 characters of
// lower-case letters, digits, '-', '_' and '.', starting and ending with a
// letter or digit. IDs are store key segments, so anything else (slashes,
// "..", spaces) is refused with ErrInvalidGeneration.
func ValidateGeneration(g string) error {
	if g == "" {
		return fmt.Errorf("%w: empty", ErrInvalidGeneration)
	}
	if len(g) > maxGenerationLen {
		return fmt.Errorf("%w: %q is longer than %d characters", ErrInvalidGeneration, truncate(g), maxGenerationLen)
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		switch {
		case alnum:
		case (c == '-' || c == '_' || c == '.') && i > 0 && i < len(g)-1:
		default:
			return fmt.Errorf("%w: %q (use lower-case letters, digits, '-', '_' and '.', starting and ending with a letter or digit)", ErrInvalidGeneration, truncate(g))
		}
	}
	if strings.Contains(g, "..") {
		return fmt.Errorf("%w: %q contains \"..\"", ErrInvalidGeneration, g)
	}
	return nil
}

// checkText refuses control characters, invalid UTF-8 and overlong
// values in a manifest string (the digest's canonical form is line based).
func checkText(field, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrManifestInvalid, field, max)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrManifestInvalid, field)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s holds a control character", ErrManifestInvalid, field)
		}
	}
	return nil
}

// truncate shortens untrusted text before it is quoted in a message.
func truncate(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
