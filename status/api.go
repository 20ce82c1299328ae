package status

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hactl-dev/hactl/model"
)

// SchemaVersion is the apiVersion of the printed status documents. Fields
// are only ever added within a version.
const SchemaVersion = "hactl.dev/v1alpha1"

// GroupVersion of the status documents.
var GroupVersion = schema.GroupVersion{Group: "hactl.dev", Version: "v1alpha1"}

// ClusterStatus is the machine-readable status of one cluster
// (`-o json|yaml`, kind ClusterStatus).
type ClusterStatus struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        StatusMeta `json:"metadata"`
	Engine          string     `json:"engine"`
	Shape           string     `json:"shape"`
	// Layout is how the members were found ("StatefulSet", "kubeadm
	// static pods"); ManagedBy who owns their pods in hactl's stead
	// (hactl's actions then refuse, naming its way).
	Layout          string               `json:"layout,omitempty"`
	ManagedBy       string               `json:"managedBy,omitempty"`
	Replicas        int                  `json:"replicas"`
	ReadyMembers    int                  `json:"readyMembers"`
	ClusterID       string               `json:"clusterID,omitempty"`
	Leader          string               `json:"leader,omitempty"`
	Verdict         VerdictStatus        `json:"verdict"`
	Members         []MemberStatus       `json:"members"`
	PDB             *model.PDBFacts      `json:"podDisruptionBudget,omitempty"`
	ClientEndpoints *model.EndpointFacts `json:"clientEndpoints,omitempty"`
	Events          []model.EventFacts   `json:"events,omitempty"`
	EngineProbed    bool                 `json:"engineProbed"`
	ObservedAt      time.Time            `json:"observedAt"`
	// Actions are hactl actions on this cluster from its ledger: every
	// one in progress and the latest finished one.
	Actions []ActionStatus `json:"actions,omitempty"`
	// LastSeed is the newest seed generation the ledger records as
	// published by hactl (nil when it records none, or the entry was
	// pruned): how old the newest base backup is.
	LastSeed *SeedStatus `json:"lastSeed,omitempty"`
	// Patroni is what the API server holds for a Patroni cluster: the
	// leader lock, the dynamic configuration, the sync standby.
	Patroni *model.PatroniClusterFacts `json:"patroni,omitempty"`
	// Operator is what the operator's own resources say of the cluster
	// (cozystack's EtcdCluster and EtcdMembers), shown beside the
	// verdict that holds it against the members' answers.
	Operator *model.OperatorFacts `json:"operator,omitempty"`
	// Notes are the engine's words on where it read the cluster's state
	// (model.ClusterFacts.Notes).
	Notes []string `json:"notes,omitempty"`

	// table is how the members read in the human table, in its engine's
	// words (ToAPI; not part of the schema).
	table *memberTable
}

// ActionStatus is one hactl action (replace, reseed, seed) as its ledger
// records it, with its phase.
type ActionStatus struct {
	ID         string    `json:"id"`
	Action     string    `json:"action"`
	Member     string    `json:"member,omitempty"`
	Generation string    `json:"generation,omitempty"`
	State      string    `json:"state"`
	Phase      string    `json:"phase"`
	StartedAt  time.Time `json:"startedAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// SeedStatus is a seed generation hactl published.
type SeedStatus struct {
	Generation  string    `json:"generation"`
	PublishedAt time.Time `json:"publishedAt"`
}

// AttachActions sets cs.Actions from a cluster's ledger entries: every
// entry in progress, and the most recent finished one; and cs.LastSeed,
// the newest seed that finished done.
func AttachActions(cs *ClusterStatus, entries []model.LedgerEntry) {
	var latest *model.LedgerEntry
	cs.Actions, cs.LastSeed = nil, nil
	for i := range entries {
		e := &entries[i]
		if e.Action == model.ActionSeed && e.State == model.EntryDone && e.Generation != "" &&
			(cs.LastSeed == nil || e.UpdatedAt.After(cs.LastSeed.PublishedAt)) {
			cs.LastSeed = &SeedStatus{Generation: e.Generation, PublishedAt: e.UpdatedAt.UTC()}
		}
		if e.State == model.EntryInProgress {
			cs.Actions = append(cs.Actions, actionStatus(e))
			continue
		}
		if latest == nil || e.UpdatedAt.After(latest.UpdatedAt) {
			latest = e
		}
	}
	if latest != nil {
		cs.Actions = append(cs.Actions, actionStatus(latest))
	}
}

func actionStatus(e *model.LedgerEntry) ActionStatus {
	return ActionStatus{ID: e.ID, Action: e.Action.String(), Member: e.Member, Generation: e.Generation,
		State: string(e.State), Phase: e.Phase.String(), StartedAt: e.StartedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
}

// StatusMeta names the cluster.
type StatusMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Context is the kubeconfig context the cluster was read through,
	// set when status reads several (--context a,b, --all-contexts).
	Context string `json:"context,omitempty"`
}

// ContextError is a context status could not read, and why.
type ContextError struct {
	Context string `json:"context"`
	Error   string `json:"error"`
}

// VerdictStatus is the verdict with each reason's impact spelled out.
type VerdictStatus struct {
	ControlReady  bool           `json:"controlReady"`
	FailoverReady bool           `json:"failoverReady"`
	Reasons       []ReasonStatus `json:"reasons"`
}

// ReasonStatus is one reason code with its impact ("control", "failover",
// "info").
type ReasonStatus struct {
	Code   string `json:"code"`
	Impact string `json:"impact"`
	Member string `json:"member,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// MemberStatus is one member row.
type MemberStatus struct {
	Name      string     `json:"name"`
	Ordinal   int        `json:"ordinal"`
	Pod       string     `json:"pod,omitempty"`
	PodUID    string     `json:"podUID,omitempty"`
	Node      string     `json:"node,omitempty"`
	Role      string     `json:"role"`
	Phase     string     `json:"phase"`
	Ready     bool       `json:"ready"`
	Restarts  int        `json:"restarts"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	Waiting   string     `json:"waiting,omitempty"`
	PVC       string     `json:"pvc,omitempty"`
	PVCPhase  string     `json:"pvcPhase,omitempty"`
	// Engine facts (absent when the member was not probed).
	Reachable  *bool  `json:"reachable,omitempty"`
	ProbeError string `json:"probeError,omitempty"`
	MemberID   string `json:"memberID,omitempty"`
	ClusterID  string `json:"clusterID,omitempty"`
	// Lag is null when no real leader frontier was read (unknown, never 0).
	Lag              *int64   `json:"lag"`
	Version          string   `json:"version,omitempty"`
	RaftTerm         uint64   `json:"raftTerm,omitempty"`
	RaftIndex        uint64   `json:"raftIndex,omitempty"`
	RaftAppliedIndex uint64   `json:"raftAppliedIndex,omitempty"`
	DBSize           int64    `json:"dbSize,omitempty"`
	IsLearner        bool     `json:"isLearner,omitempty"`
	Alarms           []string `json:"alarms,omitempty"`
	// Patroni is what a Patroni member's REST API said (role, state,
	// timeline, WAL positions, replication).
	Patroni *model.PatroniFacts `json:"patroni,omitempty"`
	// Document is what the member's status document said through its
	// cluster's mapping (the http engine): role, readiness, positions.
	Document *model.DocumentFacts `json:"document,omitempty"`
	// ServingCerts are the certificates the member served in its probe's
	// TLS handshakes; ProbeSeconds how long its probe took.
	ServingCerts []model.CertFacts `json:"servingCerts,omitempty"`
	ProbeSeconds float64           `json:"probeSeconds,omitempty"`
	Reasons      []string          `json:"reasons,omitempty"`
}

// ClusterStatusList holds several ClusterStatus documents.
type ClusterStatusList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []ClusterStatus `json:"items"`
	// Errors are the contexts that could not be read (several contexts
	// at once only); their clusters are not in Items.
	Errors []ContextError `json:"errors,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (c *ClusterStatus) DeepCopyObject() runtime.Object { return deepCopy(c, &ClusterStatus{}) }

// DeepCopyObject implements runtime.Object.
func (l *ClusterStatusList) DeepCopyObject() runtime.Object {
	return deepCopy(l, &ClusterStatusList{})
}

func deepCopy[T runtime.Object](in T, out T) runtime.Object {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err) // every field is a plain value; cannot happen
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// Document is the printed document of a result: its schema (ToAPI) with
// the cluster's actions and last seed from its ledger (AttachActions), as
// status prints it and as the exporter's metrics read it.
func Document(r Result) *ClusterStatus {
	cs := ToAPI(r)
	if es := r.Observation.Ledger; len(es) > 0 {
		AttachActions(cs, es)
	}
	return cs
}

// ToAPI converts a result to its printed schema.
func ToAPI(r Result) *ClusterStatus {
	o, v := r.Observation, r.Verdict
	cs := &ClusterStatus{
		TypeMeta:        metav1.TypeMeta{APIVersion: SchemaVersion, Kind: "ClusterStatus"},
		Metadata:        StatusMeta{Name: o.Cluster.Name, Namespace: o.Cluster.Namespace},
		Engine:          o.Cluster.Engine.String(),
		Shape:           o.Cluster.Shape.String(),
		Layout:          o.Cluster.Layout,
		Replicas:        o.Cluster.Replicas,
		PDB:             o.PDB,
		ClientEndpoints: o.ClientEndpoints,
		Events:          o.Events,
		EngineProbed:    o.EngineProbed,
		Patroni:         o.Cluster.Patroni,
		Operator:        o.Cluster.Operator,
		Notes:           o.Cluster.Notes,
		ObservedAt:      o.At.UTC(),
		Verdict:         VerdictStatus{ControlReady: v.ControlReady, FailoverReady: v.FailoverReady, Reasons: []ReasonStatus{}},
		Members:         []MemberStatus{},
	}
	if m := o.Cluster.ManagedBy; m != nil {
		cs.ManagedBy = m.Name
	}
	byMember := map[string][]string{}
	for _, r := range v.Reasons {
		cs.Verdict.Reasons = append(cs.Verdict.Reasons, ReasonStatus{Code: r.Code.String(), Impact: r.Code.Impact().String(), Member: r.Member, Detail: r.Detail})
		if r.Member != "" {
			byMember[r.Member] = appendUnique(byMember[r.Member], r.Code.String())
		}
	}
	for _, m := range o.Members {
		ms := MemberStatus{Name: m.Name, Ordinal: m.Ordinal, Phase: m.Phase.String(), Role: m.Engine.Role().String(), Lag: m.Lag, Reasons: byMember[m.Name]}
		if r.View != nil {
			ms.Role = r.View.Role(m)
		}
		if p := m.Pod; p != nil {
			t := p.CreatedAt.UTC()
			ms.Pod, ms.PodUID, ms.Node, ms.Ready, ms.Restarts, ms.CreatedAt = p.Name, p.UID, p.Node, p.Ready, p.Restarts, &t
			ms.Waiting = p.WaitingReason
			if ms.Ready {
				cs.ReadyMembers++
			}
		}
		if c := m.PVC; c != nil {
			ms.PVC, ms.PVCPhase = c.Name, c.Phase
		}
		if e := m.Engine; e != nil {
			r := e.Reachable
			ms.Reachable, ms.ProbeError = &r, e.Err
			ms.MemberID, ms.ClusterID, ms.Version = e.MemberID, e.ClusterID, e.Version
			ms.RaftTerm, ms.RaftIndex, ms.RaftAppliedIndex = e.RaftTerm, e.RaftIndex, e.RaftApplied
			ms.DBSize, ms.IsLearner = e.DBSize, e.IsLearner
			for _, a := range e.Alarms {
				ms.Alarms = appendUnique(ms.Alarms, a.Type)
			}
			ms.Patroni, ms.Document, ms.ServingCerts, ms.ProbeSeconds = e.Patroni, e.Document, e.ServingCerts, e.Took.Seconds()
		}
		cs.Members = append(cs.Members, ms)
	}
	cs.ClusterID, cs.Leader = r.Analysis.ClusterID, r.Analysis.LeaderMember
	cs.table = buildTable(r)
	return cs
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// ListToAPI converts several results.
func ListToAPI(rs []Result) *ClusterStatusList {
	l := &ClusterStatusList{TypeMeta: metav1.TypeMeta{APIVersion: SchemaVersion, Kind: "ClusterStatusList"}, Items: []ClusterStatus{}}
	for _, r := range rs {
		l.Items = append(l.Items, *ToAPI(r))
	}
	return l
}
