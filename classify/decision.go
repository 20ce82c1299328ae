package classify

import (
	"time"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/verdict"
)

// DefaultMaxAge is the oldest observation Classify acts on.
const DefaultMaxAge = verdict.DefaultStaleAfter

// DefaultStaleEntryAfter is how long an in-progress entry whose recorded
// objects are all gone sits untouched before it is stale: longer than
// any wait of a live action (10 minutes) several times over.
const DefaultStaleEntryAfter = time.Hour

// withDefaults is o with every zero field that has a default filled in.
func withDefaults(o model.ActionOptions) model.ActionOptions {
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.StaleEntryAfter == 0 {
		o.StaleEntryAfter = DefaultStaleEntryAfter
	}
	if o.Verdict.LagThreshold == 0 {
		o.Verdict.LagThreshold = model.DefaultLagThreshold
	}
	return o
}
