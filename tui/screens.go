package tui

// screen is the top-level view the TUI shows.
type screen int

const (
	// screenClusters lists every cluster in scope.
	screenClusters screen = iota
	// screenCluster shows one cluster, in one of its tabs.
	screenCluster
)

func (s screen) String() string {
	switch s {
	case screenClusters:
		return "clusters"
	case screenCluster:
		return "cluster"
	}
	return "unknown"
}

// tab is one view of a cluster.
type tab int

const (
	tabMembers tab = iota
	tabSeed
	tabReadiness
	numTabs
)

func (t tab) String() string {
	switch t {
	case tabMembers:
		return "members"
	case tabSeed:
		return "seed phase"
	case tabReadiness:
		return "readiness"
	}
	return "unknown"
}
