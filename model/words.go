package model

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The helpers below word reasons the same way in the verdict and in every
// engine's rules.

// Plural renders "1 voter", "3 voters".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// BytesIEC renders a byte count in binary units: "512 B", "1.5 MiB".
func BytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// OnWhich renders members grouped by a value, "v1 on a, b; v2 on c",
// sorted by value.
func OnWhich(by map[string][]string) string {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s on %s", k, strings.Join(by[k], ", ")))
	}
	return strings.Join(parts, "; ")
}

// RoundAge rounds an age for printing, without sub-second noise.
func RoundAge(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// ProbeDetail words a failed probe of e: prefix, the kind of failure
// (unless it is about credentials, which prefix says) and the error.
func ProbeDetail(prefix string, e *EngineFacts) string {
	d := prefix
	if e.Failure != ProbeFailureNone && e.Failure != ProbeFailureCredentials {
		d += " (" + e.Failure.String() + ")"
	}
	if e.Err != "" {
		d += ": " + e.Err
	}
	return d
}

// Reasons collects reasons as rules find them, each once, in the order
// found.
type Reasons struct {
	seen map[Reason]bool
	// List holds the reasons found.
	List []Reason
}

// Add adds the reason code for member ("" for the cluster), its detail
// formatted from format and args, unless the same reason was added
// already.
func (r *Reasons) Add(code ReasonCode, member, format string, args ...any) {
	x := Reason{Code: code, Member: member, Detail: fmt.Sprintf(format, args...)}
	if r.seen == nil {
		r.seen = map[Reason]bool{}
	}
	if r.seen[x] {
		return
	}
	r.seen[x] = true
	r.List = append(r.List, x)
}
