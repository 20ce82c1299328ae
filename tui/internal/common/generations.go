package common

import (
	"context"
	"time"
)

// Generation is one seed generation of a cluster, as the seed-phase view
// lists it.
type Generation struct {
	ID           string
	Created      time.Time
	SourceMember string
	Revision     int64
	Term         uint64
	Bytes        int64
	Files        int
	// Complete: the manifest was published (a generation without one is
	// partial and never used).
	Complete bool
	// InUse names an action that references the generation.
	InUse string
}

// Generations lists a cluster's seed generations. Every method may block.
type Generations interface {
	List(ctx context.Context, namespace, cluster string) ([]Generation, error)
}

// GenerationsMsg carries a cluster's generations (Key is the cluster's
// key, ClusterKey).
type GenerationsMsg struct {
	Key  string
	Gens []Generation
	Err  error
}
