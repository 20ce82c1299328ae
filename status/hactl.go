package status

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/model"
)

// hactl's own objects beside each cluster: its action lock (Lease
// hactl-CLUSTER) and its ledger (ConfigMap hactl-CLUSTER), both labelled
// LabelCluster=CLUSTER. They are observed with the cluster's other
// objects and decoded here; actions writes them.
const (
	// LabelCluster names the cluster a lock Lease or ledger ConfigMap
	// belongs to.
	LabelCluster = "hactl.dev/cluster"
	// LedgerKeyClusterID is the ledger's key holding the engine cluster
	// ID hactl saw formed.
	LedgerKeyClusterID = "cluster-id"
	// LedgerEntryKeyPrefix starts the key of every ledger entry (its ID
	// follows).
	LedgerEntryKeyPrefix = "action."
)

// LockName is the name of a cluster's lock Lease and ledger ConfigMap.
func LockName(cluster string) string { return "hactl-" + cluster }

// DecodeLock reads a lock Lease. Whether its holder is gone is an edge
// fact this decoder cannot know (Observer.HolderGone).
func DecodeLock(l *coordinationv1.Lease) *model.LockFacts {
	f := &model.LockFacts{Name: l.Name, ResourceVersion: l.ResourceVersion}
	s := l.Spec
	if s.HolderIdentity != nil {
		f.Holder = *s.HolderIdentity
	}
	if s.AcquireTime != nil {
		f.AcquiredAt = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		f.RenewedAt = s.RenewTime.Time
	}
	if s.LeaseDurationSeconds != nil {
		f.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	return f
}

// LedgerContents is what a ledger ConfigMap holds.
type LedgerContents struct {
	// Entries are the actions recorded, oldest first.
	Entries []model.LedgerEntry
	// ClusterID is the engine cluster ID hactl saw formed.
	ClusterID string
	// Unreadable lists keys whose values did not decode.
	Unreadable []string
}

// DecodeLedger reads a ledger ConfigMap.
func DecodeLedger(cm *corev1.ConfigMap) LedgerContents {
	out := LedgerContents{ClusterID: cm.Data[LedgerKeyClusterID]}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		if strings.HasPrefix(k, LedgerEntryKeyPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	// One entry per ID: of several keys holding the same ID, the one the
	// writer names by it (action.<ID>), else the first.
	byID := map[string]int{}
	for _, k := range keys {
		var e model.LedgerEntry
		if err := json.Unmarshal([]byte(cm.Data[k]), &e); err != nil || e.ID == "" {
			out.Unreadable = append(out.Unreadable, k)
			continue
		}
		if i, ok := byID[e.ID]; ok {
			if k == LedgerEntryKeyPrefix+e.ID {
				out.Entries[i] = e
			}
			continue
		}
		byID[e.ID] = len(out.Entries)
		out.Entries = append(out.Entries, e)
	}
	SortEntries(out.Entries)
	return out
}

// SortEntries orders ledger entries oldest first (by start, then ID).
func SortEntries(es []model.LedgerEntry) {
	sort.SliceStable(es, func(i, j int) bool {
		if !es[i].StartedAt.Equal(es[j].StartedAt) {
			return es[i].StartedAt.Before(es[j].StartedAt)
		}
		return es[i].ID < es[j].ID
	})
}

// decodeActions adds to obs its cluster's lock and ledger from ix (none
// when its objects do not exist), and says what did not decode. gone
// says whether a lock holder is a process known to have ended (nil:
// none is).
func decodeActions(obs *model.Observation, ix *index, gone func(holder string) bool) Warnings {
	cl := obs.Cluster
	key := cl.Namespace + "/" + LockName(cl.Name)
	if l := ix.leases[key]; l != nil {
		obs.Lock = DecodeLock(l)
		if gone != nil && obs.Lock.Holder != "" {
			obs.Lock.HolderGone = gone(obs.Lock.Holder)
		}
	}
	cm := ix.ledgers[key]
	if cm == nil {
		return nil
	}
	led := DecodeLedger(cm)
	obs.Ledger = led.Entries
	if obs.Cluster.KnownClusterID == "" {
		obs.Cluster.KnownClusterID = led.ClusterID
	}
	var warn Warnings
	for _, k := range led.Unreadable {
		warn = append(warn, fmt.Sprintf("ledger configmap %s: key %s does not decode; it is kept but ignored", key, k))
	}
	return warn
}
