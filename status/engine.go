package status

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/format"

	"github.com/hactl-dev/hactl/model"
)

// engineStatus is what printing does differently per engine: fill the
// status document's members from the engine's facts, and print the member
// table. The rest of status names no engine: it asks the cluster's
// engineStatus (statusOf), and an engine keeps its part in its own file
// (etcd: etcd.go, Patroni: patroni.go). Decoding is the engines' own
// (engine.Decoder, engine.Keeper).
type engineStatus interface {
	// member fills the document's member ms from the engine's facts e
	// (beside the facts every engine reports).
	member(ms *MemberStatus, e *model.EngineFacts)
	// columns are the table's member columns under o, and row is one
	// member's cells.
	columns(o TableOptions) []string
	row(m MemberStatus, o TableOptions) []string
}

// engineStatuses maps each engine to its part; statusOf falls back to
// plainStatus.
var engineStatuses = map[model.Engine]engineStatus{
	model.EngineEtcd:    etcdStatus{},
	model.EnginePatroni: patroniStatus{},
}

// statusOf is engine e's part.
func statusOf(e model.Engine) engineStatus {
	if s, ok := engineStatuses[e]; ok {
		return s
	}
	return plainStatus{}
}

// needConfigMaps reports whether any of sts needs ConfigMaps read: its
// engine, named by its label, keeps objects in them (one of keepers), or
// it names one with AnnotationEngineConfig.
func needConfigMaps(sts []appsv1.StatefulSet, keepers map[model.Engine]engine.Keeper) bool {
	for i := range sts {
		if sts[i].Annotations[AnnotationEngineConfig] != "" {
			return true
		}
		// Engines that keep objects in ConfigMaps are found by their
		// label (Patroni's: docs/contract.md).
		if e := sts[i].Labels[LabelEngine]; e != "" && keepers[model.Engine(e)] != nil {
			return true
		}
	}
	return false
}

// plainStatus is the part of an engine hactl has no rules for: the
// engine container is the template's first, the members' generic facts
// are printed, nothing engine-specific is read.
type plainStatus struct{}

func (plainStatus) member(*MemberStatus, *model.EngineFacts) {}

func (plainStatus) columns(o TableOptions) []string {
	cols := []string{"ORD", "POD", "NODE", "PHASE", "READY", "VERSION", "RESTARTS", "AGE", "REASONS"}
	if o.Wide {
		cols = append(cols, "PVC", "PROBE")
	}
	return cols
}

func (plainStatus) row(m MemberStatus, o TableOptions) []string {
	row := []string{
		strconv.Itoa(m.Ordinal), format.Dash(m.Pod), format.Dash(m.Node), m.Phase, strconv.FormatBool(m.Ready),
		format.Dash(m.Version), strconv.Itoa(m.Restarts), format.Age(ptrTime(m.CreatedAt), o.Now), format.Dash(strings.Join(m.Reasons, ",")),
	}
	if !o.Wide {
		return row
	}
	return append(row, pvcCell(m), probeCell(m))
}

// positionsStatus prints a cluster whose engine was probed but keeps its
// rules and presentation in its own package (engine/http): each member's
// role, identity and lag in the engine's positions, and with -o wide its
// term, frontier and applied position.
type positionsStatus struct{ plainStatus }

func (positionsStatus) columns(o TableOptions) []string {
	cols := []string{"ORD", "POD", "NODE", "ROLE", "MEMBER ID", "PHASE", "READY", "LAG", "VERSION", "RESTARTS", "AGE", "REASONS"}
	if o.Wide {
		cols = append(cols, "PVC", "CLUSTER ID", "TERM", "FRONTIER", "APPLIED", "PROBE")
	}
	return cols
}

func (positionsStatus) row(m MemberStatus, o TableOptions) []string {
	row := memberRow(m, TableOptions{Now: o.Now})
	if !o.Wide {
		return row
	}
	return append(row, pvcCell(m), format.Dash(m.ClusterID), num(m.RaftTerm), num(m.RaftIndex), num(m.RaftAppliedIndex), probeCell(m))
}

// tableOf is the part that prints cs: its engine's, or for an engine
// with no part here whose members were probed, positionsStatus.
func tableOf(cs *ClusterStatus) engineStatus {
	es := statusOf(model.Engine(cs.Engine))
	if _, plain := es.(plainStatus); !plain {
		return es
	}
	for _, m := range cs.Members {
		if m.Reachable != nil {
			return positionsStatus{}
		}
	}
	return es
}
