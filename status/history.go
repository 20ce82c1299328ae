package status

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
)

// History sources: where a row was read.
const (
	// SourceDCS: the engine's own record in the API server
	// (model.ClusterFacts.Record: Patroni's timeline history and leader
	// lock).
	SourceDCS = "dcs"
	// SourceHactl: hactl's ledger (its actions and their receipts).
	SourceHactl = "hactl"
	// SourceEvents: Kubernetes Events about the StatefulSet, its pods and
	// claims.
	SourceEvents = "events"
	// SourceObserved: what this run observed.
	SourceObserved = "observed"
)

// ClusterHistory is one cluster's failover timeline: what happened to its
// leadership and membership, time-sorted, each row saying its source.
type ClusterHistory struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        StatusMeta   `json:"metadata"`
	Engine          string       `json:"engine"`
	Rows            []HistoryRow `json:"rows"`
	// Notes say what the timeline cannot hold (Events expire, the
	// engine keeps no history).
	Notes []string `json:"notes,omitempty"`
}

// HistoryRow is one thing that happened.
type HistoryRow struct {
	At     time.Time `json:"at"`
	Source string    `json:"source"`
	Member string    `json:"member,omitempty"`
	Event  string    `json:"event"`
	Detail string    `json:"detail,omitempty"`
}

// When is the row's time as the timeline prints it (UTC, to the second;
// "-" when unknown).
func (r HistoryRow) When() string {
	if r.At.IsZero() {
		return "-"
	}
	return r.At.UTC().Format("2006-01-02 15:04:05")
}

// DeepCopyObject implements runtime.Object.
func (h *ClusterHistory) DeepCopyObject() runtime.Object { return deepCopy(h, &ClusterHistory{}) }

// History assembles r's timeline from the engine's record in the API
// server, hactl's ledger, events (the Kubernetes Events about the
// cluster's objects, in any order; those hactl's actions wrote are left
// out, the ledger's rows say the same), what r observed, the leader
// changes hactl's actions recorded in their receipts, and those a
// long-running view saw (seen, from a LeaderLog). It is pure.
func History(r Result, events []model.EventFacts, seen ...LeaderSeen) *ClusterHistory {
	o := r.Observation
	cl := o.Cluster
	h := &ClusterHistory{
		TypeMeta: metav1.TypeMeta{APIVersion: SchemaVersion, Kind: "ClusterHistory"},
		Metadata: StatusMeta{Namespace: cl.Namespace, Name: cl.Name}, Engine: cl.Engine.String(), Rows: []HistoryRow{},
	}
	if rec := cl.Record; rec != nil {
		for _, e := range rec.Events {
			h.Rows = append(h.Rows, HistoryRow{At: e.At, Source: SourceDCS, Member: e.Member, Event: e.Event, Detail: e.Detail})
		}
	} else {
		h.Notes = append(h.Notes, fmt.Sprintf("engine %s keeps no leadership history in the API server: the timeline holds hactl's actions, Events and this observation", cl.Engine))
	}
	for _, e := range o.Ledger {
		h.Rows = append(h.Rows, ledgerRows(e)...)
	}
	h.Rows = append(h.Rows, receiptLeaderRows(o.Ledger)...)
	h.Rows = append(h.Rows, seenRows(seen)...)
	for _, e := range events {
		if e.Controller == EventController {
			continue // hactl's own: the ledger's rows say the same
		}
		h.Rows = append(h.Rows, HistoryRow{At: e.Last, Source: SourceEvents, Member: eventMember(e.Object, cl.Name), Event: e.Reason,
			Detail: eventDetail(e)})
	}
	h.Notes = append(h.Notes, "Kubernetes keeps Events for an hour by default (kube-apiserver --event-ttl): older restarts and deletions are not listed")
	if now := observedRow(r); now != nil {
		h.Rows = append(h.Rows, *now)
	}
	sort.SliceStable(h.Rows, func(i, j int) bool { return h.Rows[i].At.Before(h.Rows[j].At) })
	for i := range h.Rows {
		// Names and details come from ConfigMaps, Events and members:
		// printed as text wherever they go.
		x := &h.Rows[i]
		x.Member, x.Event, x.Detail = engine.Printable(x.Member), engine.Printable(x.Event), engine.Printable(x.Detail)
	}
	return h
}

// ledgerRows are one hactl action: its start, every change it made or
// may have made, and its end.
func ledgerRows(e model.LedgerEntry) []HistoryRow {
	what := string(e.Action)
	if e.Member != "" {
		what += " " + e.Member
	}
	out := []HistoryRow{{At: e.StartedAt, Source: SourceHactl, Member: e.Member, Event: string(e.Action) + "-started",
		Detail: fmt.Sprintf("%s (ledger entry %s) by %s", what, e.ID, e.Holder)}}
	for _, r := range e.Receipts {
		if !r.Step.Mutates() && r.Outcome != model.OutcomeFailed {
			continue
		}
		out = append(out, HistoryRow{At: r.At, Source: SourceHactl, Member: cmp.Or(r.Member, e.Member), Event: string(r.Step),
			Detail: fmt.Sprintf("%s: %s", r.Outcome, r.Detail)})
	}
	if e.State != model.EntryInProgress {
		out = append(out, HistoryRow{At: e.UpdatedAt, Source: SourceHactl, Member: e.Member, Event: string(e.Action) + "-" + string(e.State),
			Detail: fmt.Sprintf("%s %s, phase %s", what, e.State, e.Phase)})
	}
	return out
}

// eventMember is the member of cluster an Event's object belongs to: a
// pod by its name, a claim by its <template>-<member> name ("" for the
// StatefulSet's own).
func eventMember(object, cluster string) string {
	kind, name, _ := strings.Cut(object, "/")
	if kind == "PersistentVolumeClaim" {
		if i := strings.LastIndex(name, "-"+cluster+"-"); i > 0 {
			name = name[i+1:]
		}
	}
	if _, ok := source.MemberOrdinal(cluster, name); ok && (kind == "Pod" || kind == "PersistentVolumeClaim") {
		return name
	}
	return ""
}

func eventDetail(e model.EventFacts) string {
	d := e.Object + ": " + e.Message
	if e.Count > 1 {
		d += fmt.Sprintf(" (×%d)", e.Count)
	}
	return d
}

// observedRow is the leadership this observation saw: the leader the
// members (or the lock) agree on, and its term or timeline.
func observedRow(r Result) *HistoryRow {
	o := r.Observation
	if o.At.IsZero() {
		return nil
	}
	leader := r.Analysis.LeaderMember
	d := leader + " leads"
	rec := o.Cluster.Record
	switch {
	case !o.EngineProbed && rec != nil && rec.Holder != "":
		// Only the lock was read: who holds it, not who serves.
		leader, d = rec.Holder, rec.Holder+" holds the leader lock"
		if rec.HolderStale(o.At) {
			d += ", which has expired (nobody renews it)"
		}
	case !o.EngineProbed:
		leader, d = "", "leader not read: the members were not asked (kubectl hactl status asks them)"
	case leader == "":
		d = "no leader agreed"
	}
	for _, m := range o.Members {
		if e := m.Engine; e != nil && e.Reachable && m.Name == leader && e.RaftTerm > 0 {
			d += fmt.Sprintf(" (term %d)", e.RaftTerm)
		}
	}
	return &HistoryRow{At: o.At, Source: SourceObserved, Member: leader, Event: "now", Detail: d}
}

// PrintHistory writes h as a table: time (UTC), source, member, event and
// detail, oldest first.
func PrintHistory(w io.Writer, h *ClusterHistory, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !noHeaders {
		fmt.Fprintln(tw, "TIME (UTC)\tSOURCE\tMEMBER\tEVENT\tDETAIL")
	}
	for _, r := range h.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.When(), r.Source, format.Dash(r.Member), printers.EscapeTerminal(r.Event), printers.EscapeTerminal(r.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range h.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// EventController is the reportingController of the Events hactl's
// actions write (the ledger holds the same, as the timeline's hactl
// rows).
const EventController = "hactl.dev/hactl"

// EventsOf are the Events of evs about r's cluster: its StatefulSet, the
// pods named after it by ordinal and their claims (those of members gone
// or replaced since too), whatever their number (status keeps only the
// newest few).
func EventsOf(evs []corev1.Event, r Result) []model.EventFacts {
	o := r.Observation
	members := map[string]bool{}
	for _, m := range o.Members {
		members[m.Name] = true
	}
	ours := func(kind, name string) bool {
		switch kind {
		case "StatefulSet", o.Cluster.OwnerKind:
			// Its StatefulSet, or the operator's resource it answers to
			// (hactl's own Events are about that object).
			return name == o.Cluster.Name
		case "Pod":
			_, ok := source.MemberOrdinal(o.Cluster.Name, name)
			return ok || members[name]
		case "PersistentVolumeClaim":
			// <template>-<member>: also a claim deleted since (a
			// replace), or a member scaled away.
			return eventMember(kind+"/"+name, o.Cluster.Name) != ""
		}
		return false
	}
	var out []model.EventFacts
	for i := range evs {
		e := &evs[i]
		if e.Namespace != o.Cluster.Namespace || !ours(e.InvolvedObject.Kind, e.InvolvedObject.Name) {
			continue
		}
		out = append(out, eventFacts(e))
	}
	return out
}
