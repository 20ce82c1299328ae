package adversarial

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

// auditPolicy records every write in the test namespace: the Leases,
// pods, PVCs and StatefulSets with their request (the holder a Lease
// names, a delete's preconditions), everything else (Secrets, the ledger)
// by its metadata only.
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
	ObjectRef  struct {
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
		!strings.Contains(e.RequestURI, "dryRun=")
}

func (e auditEvent) String() string {
	return fmt.Sprintf("%s %s %s/%s at %s by %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name,
		e.RequestReceived.Format("15:04:05.000000"), e.holder())
}

// readAudit reads the audit log's completed, successful, non-dry-run writes.
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
func guarded(e auditEvent, cluster string) bool {
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

// checkLockDiscipline checks, from the audit log alone, that every write a
// hactl process made to the cluster's objects was made while the lock
// Lease's last completed write named that process as its holder, and that
// no two processes' changing spans overlap. It returns the violations and
// how many guarded writes it checked.
func checkLockDiscipline(events []auditEvent, cluster string) (violations []string, checked int) {
	lockName := actions.LockName(cluster)
	var leaseWrites []auditEvent
	for _, e := range events {
		if e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == lockName && e.ObjectRef.Namespace == namespace {
			leaseWrites = append(leaseWrites, e)
		}
	}
	sort.SliceStable(leaseWrites, func(i, j int) bool { return leaseWrites[i].StageTimestamp.Before(leaseWrites[j].StageTimestamp) })
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	for _, e := range events {
		h := e.holder()
		if h == "" && strings.HasPrefix(e.UserAgent, "kubectl-hactl/") {
			violations = append(violations, fmt.Sprintf("%s: a hactl request whose user agent names no lock identity (%q)", e, e.UserAgent))
		}
		if h == "" || !guarded(e, cluster) {
			continue
		}
		checked++
		var last *auditEvent
		for i := range leaseWrites {
			if leaseWrites[i].StageTimestamp.After(e.RequestReceived) {
				break
			}
			last = &leaseWrites[i]
		}
		switch {
		case last == nil:
			violations = append(violations, fmt.Sprintf("%s: the lock was never taken before it", e))
		case leaseHolder(*last) != h:
			violations = append(violations, fmt.Sprintf("%s: the lock's last write before it (%s at %s) left it to %q",
				e, last.Verb, last.StageTimestamp.Format("15:04:05.000000"), leaseHolder(*last)))
		}
		sp := spans[h]
		if sp == nil {
			sp = &span{first: e.RequestReceived}
			spans[h] = sp
		}
		sp.last = e.StageTimestamp
	}
	var holders []string
	for h := range spans {
		holders = append(holders, h)
	}
	sort.Slice(holders, func(i, j int) bool { return spans[holders[i]].first.Before(spans[holders[j]].first) })
	for i := 1; i < len(holders); i++ {
		// the latest end of every span that started before this one
		var prev string
		for _, h := range holders[:i] {
			if prev == "" || spans[h].last.After(spans[prev].last) {
				prev = h
			}
		}
		a, b := spans[prev], spans[holders[i]]
		if b.first.Before(a.last) {
			violations = append(violations, fmt.Sprintf("%s changed the cluster from %s to %s, and %s from %s: their changes overlap",
				prev, a.first.Format("15:04:05.000"), a.last.Format("15:04:05.000"), holders[i], b.first.Format("15:04:05.000")))
		}
	}
	return violations, checked
}
