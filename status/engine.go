package status

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/hactl-dev/hactl/internal/format"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// needConfigMaps reports whether any of sts needs ConfigMaps (and
// Endpoints) read: its engine keeps objects in them (one of p's
// keepers), named by its label or recognised by that engine's decoder
// from its pod template (a Patroni cluster with the Kubernetes DCS), or
// it names one with AnnotationEngineConfig.
func needConfigMaps(sts []appsv1.StatefulSet, p engineParts) bool {
	for i := range sts {
		if sts[i].Annotations[AnnotationEngineConfig] != "" {
			return true
		}
		if e := sts[i].Labels[LabelEngine]; e != "" {
			if p.keepers[model.Engine(e)] != nil {
				return true
			}
			continue
		}
		var t *model.PodTemplate
		for e, k := range p.keepers {
			d := p.decoders[e]
			if k == nil || d == nil {
				continue
			}
			if t == nil {
				pt := source.PodTemplate(&sts[i])
				t = &pt
			}
			if d.Recognises(*t) {
				return true
			}
		}
	}
	return false
}

// memberTable is how a cluster's members read in the table: the
// engine's columns (narrow between NODE and PHASE, wide between PVC and
// PROBE), whether a LAG column follows READY, and each member's cells in
// the same order as the document's members. ToAPI builds it from the
// cluster's view (Result.View); a document built otherwise prints the
// members' generic facts only.
type memberTable struct {
	narrow, wide []string
	lag          bool
	rows         []memberCells
}

// memberCells are one member's engine cells under a memberTable.
type memberCells struct {
	narrow, wide []string
	lag          string
}

// tableOf is the table part of r's cluster: its engine's TableView; for
// an engine with none whose members were probed, positions; else none
// (the members' generic facts alone).
func tableOf(r Result) (model.TableView, func(*int64) string) {
	if tv, ok := r.View.(model.TableView); ok {
		return tv, r.View.LagText
	}
	for _, m := range r.Observation.Members {
		if m.Engine != nil {
			return positions{}, format.Lag
		}
	}
	return nil, nil
}

// buildTable is r's memberTable, nil when its engine shows no columns.
func buildTable(r Result) *memberTable {
	tv, lag := tableOf(r)
	if tv == nil {
		return nil
	}
	t := &memberTable{lag: true}
	t.narrow, t.wide = tv.TableColumns()
	for _, m := range r.Observation.Members {
		n, w := tv.TableCells(m)
		t.rows = append(t.rows, memberCells{narrow: n, wide: w, lag: lag(m.Lag)})
	}
	return t
}

// positions shows a cluster whose engine was probed but offers no
// TableView (engine/http): each member's role, identity and lag in the
// engine's positions, and with -o wide its term, frontier and applied
// position.
type positions struct{}

func (positions) TableColumns() (narrow, wide []string) {
	return []string{"ROLE", "MEMBER ID"}, []string{"CLUSTER ID", "TERM", "FRONTIER", "APPLIED"}
}

func (positions) TableCells(m model.Member) (narrow, wide []string) {
	e := m.Engine
	if e == nil {
		e = &model.EngineFacts{}
	}
	return []string{m.Engine.Role().String(), format.Dash(e.MemberID)},
		[]string{format.Dash(e.ClusterID), format.Count(e.RaftTerm), format.Count(e.RaftIndex), format.Count(e.RaftApplied)}
}
