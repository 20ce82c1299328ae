package pgadversarial

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/actions"
)

// failoverCM is the ConfigMap Patroni's Kubernetes DCS writes when a
// member's REST API accepts a switchover (its annotations leader and
// member name the primary and the candidate): the trace a switchover
// request leaves at the API server, written by Patroni, not by hactl.
const failoverCM = cluster + "-failover"

// auditPolicy records every write in the test namespace: the Leases,
// pods, PVCs, StatefulSets, Patroni's failover ConfigMap and every
// ConfigMap created with their request (the holder a Lease names, a delete's preconditions, the
// candidate of a switchover), everything else (the ledger, Events) by its
// metadata only.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  namespaces: ["` + namespace + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
  - group: ""
    resources: ["pods", "persistentvolumeclaims"]
  - group: "apps"
    resources: ["statefulsets"]
- level: Request
  namespaces: ["` + namespace + `"]
  verbs: ["update", "patch"]
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["` + failoverCM + `"]
# a create names no object in its URL, so resourceNames never match it:
# every ConfigMap create (few: Patroni's failover ConfigMap the first
# time, the ledger, the suite's markers) is recorded with its request
- level: Request
  namespaces: ["` + namespace + `"]
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
  namespaces: ["` + namespace + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// auditEvent is what the checks read of one audit log line.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject   json.RawMessage `json:"requestObject"`
	RequestReceived time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp  time.Time       `json:"stageTimestamp"`
}

var identityRE = regexp.MustCompile(`hactl/\S+$`)

// holder is the lock identity a hactl request names in its user agent, ""
// for any other client.
func (e auditEvent) holder() string {
	return identityRE.FindString(e.UserAgent)
}

func (e auditEvent) ok() bool {
	return e.Stage == "ResponseComplete" && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300 &&
		!e.dryRun()
}

// dryRun reports whether the request was a dry run: in its query, or (a
// delete's) in the DeleteOptions of its body.
func (e auditEvent) dryRun() bool {
	if strings.Contains(e.RequestURI, "dryRun=") {
		return true
	}
	var o struct {
		DryRun []string `json:"dryRun"`
	}
	return e.Verb == "delete" && json.Unmarshal(e.RequestObject, &o) == nil && len(o.DryRun) > 0
}

func (e auditEvent) String() string {
	who := e.holder()
	if who == "" {
		who = e.User.Username
	}
	return fmt.Sprintf("%s %s %s/%s at %s by %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name,
		e.RequestReceived.Format("15:04:05.000000"), who)
}

// readAudit reads the audit log's completed, successful, non-dry-run
// writes, in the order the API server received them.
func readAudit(path string) ([]auditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		if e.ok() {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestReceived.Before(out[j].RequestReceived) })
	return out, sc.Err()
}

// leaseHolder is the holder a write of the lock Lease leaves: "" for a
// release or a delete.
func leaseHolder(e auditEvent) string {
	if e.Verb == "delete" {
		return ""
	}
	var l struct {
		Spec struct {
			HolderIdentity *string `json:"holderIdentity"`
		} `json:"spec"`
	}
	if json.Unmarshal(e.RequestObject, &l) != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// guarded reports whether a write is one only the lock holder may make:
// a pod, PVC or StatefulSet of the cluster, or its ledger.
func guarded(e auditEvent) bool {
	if e.ObjectRef.Namespace != namespace || e.ObjectRef.Subresource == "status" {
		return false
	}
	switch e.ObjectRef.Resource {
	case "pods", "persistentvolumeclaims", "statefulsets":
		return true
	case "configmaps":
		return e.ObjectRef.Name == actions.LockName(cluster)
	}
	return false
}

// deletedUID is the UID precondition of a delete ("" when it had none).
func deletedUID(e auditEvent) string {
	var o struct {
		Preconditions *struct {
			UID *string `json:"uid"`
		} `json:"preconditions"`
	}
	if json.Unmarshal(e.RequestObject, &o) != nil || o.Preconditions == nil || o.Preconditions.UID == nil {
		return ""
	}
	return *o.Preconditions.UID
}

// failoverRequest is the candidate and primary a write of Patroni's
// failover ConfigMap names; ok is false for a write that clears it (the
// switchover carried out or cancelled).
func failoverRequest(e auditEvent) (leader, candidate string, ok bool) {
	if e.ObjectRef.Resource != "configmaps" || e.ObjectRef.Name != failoverCM || e.Verb == "delete" {
		return "", "", false
	}
	var o struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if json.Unmarshal(e.RequestObject, &o) != nil {
		return "", "", false
	}
	m := o.Metadata.Annotations["member"]
	l := o.Metadata.Annotations["leader"]
	if m == nil || *m == "" {
		return "", "", false
	}
	if l != nil {
		leader = *l
	}
	return leader, *m, true
}

// leaseWrites are the writes of the cluster's lock Lease, in the order
// they completed.
func leaseWrites(events []auditEvent) []auditEvent {
	var out []auditEvent
	for _, e := range events {
		if e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == actions.LockName(cluster) && e.ObjectRef.Namespace == namespace {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StageTimestamp.Before(out[j].StageTimestamp) })
	return out
}

// holderAt is the holder the last Lease write completed before t left
// (nil when the lock was never written before t).
func holderAt(leases []auditEvent, t time.Time) *auditEvent {
	var last *auditEvent
	for i := range leases {
		if leases[i].StageTimestamp.After(t) {
			break
		}
		last = &leases[i]
	}
	return last
}

// lastRenewal is the last Lease write naming holder h that was received
// before t (nil if none).
func lastRenewal(leases []auditEvent, h string, t time.Time) *auditEvent {
	var last *auditEvent
	for i := range leases {
		if leases[i].RequestReceived.After(t) {
			break
		}
		if leaseHolder(leases[i]) == h {
			last = &leases[i]
		}
	}
	return last
}
