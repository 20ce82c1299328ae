package e2esuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
)

// AuditPolicy is the audit policy of an adversarial suite
// (Options.AuditPolicy): it records every write in namespace. The lock
// Leases, pods, PVCs and StatefulSets are recorded with their request
// (the holder a Lease names, a delete's preconditions), every other
// delete too (its DeleteOptions: a dry run sent in the body shows only
// there), then what the rules of extra say (items of the policy's rules
// list, for what a suite needs recorded beside), everything else by its
// metadata only.
func AuditPolicy(namespace string, extra ...string) string {
	ns := `  namespaces: ["` + namespace + `"]` + "\n"
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
` + ns + `  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
  - group: ""
    resources: ["pods", "persistentvolumeclaims"]
  - group: "apps"
    resources: ["statefulsets"]
- level: Request
` + ns + `  verbs: ["delete", "deletecollection"]
` + strings.Join(extra, "") + `- level: Metadata
` + ns + `  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`
}

// AuditEvent is what the checks read of one line of the API server's
// audit log.
type AuditEvent struct {
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
	// RequestObject is the request's body, where the policy records it
	// (level Request): the object written, or a delete's DeleteOptions.
	RequestObject   json.RawMessage `json:"requestObject"`
	RequestReceived time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp  time.Time       `json:"stageTimestamp"`
}

var identityRE = regexp.MustCompile(`hactl/\S+$`)

// Holder is the lock identity a hactl request names at the end of its
// user agent, "" for any other client.
func (e AuditEvent) Holder() string {
	return identityRE.FindString(e.UserAgent)
}

// Happened reports whether the write took effect: the request was
// answered (stage ResponseComplete) with a success, and was no dry run.
func (e AuditEvent) Happened() bool {
	return e.Stage == "ResponseComplete" && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300 && !e.DryRun()
}

// DryRun reports whether the request was a dry run: dryRun in the query
// of its URI (any request), or in the DeleteOptions of a delete's body
// (as client-go sends a delete's options). A delete whose body the
// policy did not record (level Metadata) reads as a real one.
func (e AuditEvent) DryRun() bool {
	if u, err := url.ParseRequestURI(e.RequestURI); err == nil {
		for _, v := range u.Query()["dryRun"] {
			if v != "" {
				return true
			}
		}
	}
	if e.Verb != "delete" && e.Verb != "deletecollection" {
		return false
	}
	var o struct {
		DryRun []string `json:"dryRun"`
	}
	return json.Unmarshal(e.RequestObject, &o) == nil && len(o.DryRun) > 0
}

func (e AuditEvent) String() string {
	who := e.Holder()
	if who == "" {
		who = e.User.Username
	}
	return fmt.Sprintf("%s %s %s/%s at %s by %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name,
		e.RequestReceived.Format("15:04:05.000000"), who)
}

// LeaseHolder is the holder a write of a lock Lease leaves: "" for a
// release or a delete.
func (e AuditEvent) LeaseHolder() string {
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

// DeletedUID is the UID precondition of a delete ("" when it had none).
func (e AuditEvent) DeletedUID() string {
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

// Guarded reports whether the write is one only the holder of cluster's
// lock may make: a pod, PVC or StatefulSet in namespace (not its status),
// or the cluster's ledger.
func (e AuditEvent) Guarded(namespace, cluster string) bool {
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

// ReadAudit reads an audit log's writes that happened (Happened: no dry
// run, no failed or unanswered request), in the order the API server
// received them.
func ReadAudit(path string) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		if e.Happened() {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestReceived.Before(out[j].RequestReceived) })
	return out, sc.Err()
}

// Audit reads the suite's audit log (ReadAudit) once it holds every
// request completed before the call: it creates a marker ConfigMap in the
// suite's namespace and reads the log until the marker's create is in it
// (the sandbox's own clients keep writing, so the log never stops
// growing). The policy must record ConfigMap creates in the namespace
// (AuditPolicy does).
func (s *Suite) Audit(t testing.TB) []AuditEvent {
	t.Helper()
	if s.AuditLog == "" {
		t.Fatal("the suite writes no audit log: start it with Options.AuditPolicy")
	}
	name := fmt.Sprintf("hactl-audit-marker-%d", time.Now().UnixNano())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace}}
	if _, err := s.KC.CoreV1().ConfigMaps(s.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var events []AuditEvent
	poll.Until(t, 30*time.Second, "the audit log to hold the marker "+name, func() error {
		var err error
		if events, err = ReadAudit(s.AuditLog); err != nil {
			return err
		}
		for _, e := range events {
			if e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Name == name {
				return nil
			}
		}
		return fmt.Errorf("no marker among %d events", len(events))
	}, poll.Every(500*time.Millisecond))
	return events
}

// LockWrites are the writes of cluster's lock Lease in namespace, in the
// order they completed.
func LockWrites(events []AuditEvent, namespace, cluster string) []AuditEvent {
	var out []AuditEvent
	for _, e := range events {
		if e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == actions.LockName(cluster) && e.ObjectRef.Namespace == namespace {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StageTimestamp.Before(out[j].StageTimestamp) })
	return out
}

// HolderAt is the last of the lock's writes (LockWrites) completed at or
// before t: its LeaseHolder held the lock then (nil: the lock was never
// written before t).
func HolderAt(leases []AuditEvent, t time.Time) *AuditEvent {
	var last *AuditEvent
	for i := range leases {
		if leases[i].StageTimestamp.After(t) {
			break
		}
		last = &leases[i]
	}
	return last
}

// HeldBy reports whether the lock (LockWrites) named h at t.
func HeldBy(leases []AuditEvent, h string, t time.Time) bool {
	last := HolderAt(leases, t)
	return last != nil && last.LeaseHolder() == h
}

// lastRenewal is the last lock write naming h received at or before t
// (nil if none).
func lastRenewal(leases []AuditEvent, h string, t time.Time) *AuditEvent {
	var last *AuditEvent
	for i := range leases {
		if leases[i].RequestReceived.After(t) {
			break
		}
		if leases[i].LeaseHolder() == h {
			last = &leases[i]
		}
	}
	return last
}

// CheckLockDiscipline checks, from the audit log alone, the writes hactl
// processes made from since on: each names its process's lock identity;
// each guarded one (Guarded) was received while the lock Lease's last
// completed write named that process, within a lease
// (actions.DefaultLockDuration; hactl has no flag to change it) of that
// process's last renewal; and no two processes' changing spans overlap.
// It returns the violations and how many guarded writes it checked.
func CheckLockDiscipline(events []AuditEvent, namespace, cluster string, since time.Time) (violations []string, checked int) {
	leases := LockWrites(events, namespace, cluster)
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	for _, e := range events {
		if e.RequestReceived.Before(since) {
			continue
		}
		h := e.Holder()
		if h == "" && strings.HasPrefix(e.UserAgent, "kubectl-hactl/") {
			violations = append(violations, fmt.Sprintf("%s: a hactl request whose user agent names no lock identity (%q)", e, e.UserAgent))
		}
		if h == "" || !e.Guarded(namespace, cluster) {
			continue
		}
		checked++
		last := HolderAt(leases, e.RequestReceived)
		switch {
		case last == nil:
			violations = append(violations, fmt.Sprintf("%s: the lock was never taken before it", e))
			continue
		case last.LeaseHolder() != h:
			violations = append(violations, fmt.Sprintf("%s: the lock's last write before it (%s at %s) left it to %q",
				e, last.Verb, last.StageTimestamp.Format("15:04:05.000000"), last.LeaseHolder()))
			continue
		}
		if r := lastRenewal(leases, h, e.RequestReceived); r != nil && e.RequestReceived.Sub(r.RequestReceived) > actions.DefaultLockDuration {
			violations = append(violations, fmt.Sprintf("%s: its process last renewed the lock at %s, %s before: past its lease",
				e, r.RequestReceived.Format("15:04:05.000"), e.RequestReceived.Sub(r.RequestReceived).Round(time.Millisecond)))
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

// Changed reports whether a receipt's outcome says its step changed
// something, or may have (unknown; sending, with no answer recorded).
func Changed(o model.Outcome) bool {
	return o == model.OutcomeDone || o == model.OutcomeAlready || o == model.OutcomeUnknown || o == model.OutcomeSending
}

// DeleteReceipts is what a ledger's receipts say of each fenced delete,
// by step and UID: written ahead (sending), or ended with a change.
type DeleteReceipts struct {
	sending, ended map[string]bool
}

// IndexDeletes indexes the fences of receipts.
func IndexDeletes(receipts []model.Receipt) DeleteReceipts {
	d := DeleteReceipts{sending: map[string]bool{}, ended: map[string]bool{}}
	for _, rc := range receipts {
		for _, f := range rc.Fences {
			key := string(rc.Step) + " " + f.UID
			switch {
			case rc.Outcome == model.OutcomeSending:
				d.sending[key] = true
			case Changed(rc.Outcome):
				d.ended[key] = true
			}
		}
	}
	return d
}

// Check returns what is wrong with the receipts of e, a delete of a pod
// or PVC ("" if nothing): it had no UID precondition, the ledger has no
// receipt for its UID, or only the one written ahead of it although its
// process was not stopped (SIGKILLed or frozen by the suite: only then
// may "sending" be the last word).
func (d DeleteReceipts) Check(e AuditEvent, stopped bool) string {
	uid := e.DeletedUID()
	step := model.StepDeletePod
	if e.ObjectRef.Resource == "persistentvolumeclaims" {
		step = model.StepDeletePVC
	}
	key := string(step) + " " + uid
	switch {
	case uid == "":
		return fmt.Sprintf("%s had no UID precondition", e)
	case !d.sending[key] && !d.ended[key]:
		return fmt.Sprintf("%s (uid %s) has no %s receipt in the ledger", e, uid, step)
	case !d.ended[key] && !stopped:
		return fmt.Sprintf("%s (uid %s): the ledger says only that it was being sent, although its process was neither killed nor frozen", e, uid)
	}
	return ""
}

// CheckChanged reports a run that saw none of what it counts (n of
// what): a run in which nothing changed proves nothing.
func CheckChanged(what string, n int) []string {
	if n == 0 {
		return []string{fmt.Sprintf("the run observed no %s: no action ran, so nothing was proven", what)}
	}
	return nil
}

// NewAuditEvent is a hand-written audit event for the checks' own tests:
// a write of verb to resource namespace/name that happened, received at
// at and answered a millisecond later, with request body body, by the
// hactl process whose lock identity is holder ("" for another client).
func NewAuditEvent(namespace, verb, resource, name, holder string, at time.Time, body string) AuditEvent {
	e := AuditEvent{Stage: "ResponseComplete", Verb: verb, RequestReceived: at, StageTimestamp: at.Add(time.Millisecond),
		RequestObject: json.RawMessage(body)}
	e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name = resource, namespace, name
	e.ResponseStatus.Code = 200
	if holder != "" {
		e.UserAgent = "kubectl-hactl/v0 (linux/amd64) kubernetes/x " + holder
	}
	return e
}

// NewLockWrite is a hand-written write of cluster's lock Lease (as
// NewAuditEvent) that leaves it to holder ("": a release).
func NewLockWrite(namespace, cluster, holder string, at time.Time) AuditEvent {
	body := `{"spec":{}}`
	if holder != "" {
		body = `{"spec":{"holderIdentity":"` + holder + `"}}`
	}
	return NewAuditEvent(namespace, "update", "leases", actions.LockName(cluster), "", at, body)
}

// WantViolation is the assertion of the checks' own tests: the
// violations got, of the observations named name, include one containing
// want, or are none when want is "".
func WantViolation(t testing.TB, name string, got []string, want string) {
	t.Helper()
	joined := strings.Join(got, "\n")
	switch {
	case want == "" && joined != "":
		t.Errorf("%s: violations on a clean run: %s", name, joined)
	case want != "" && !strings.Contains(joined, want):
		t.Errorf("%s: violations %q, want one containing %q", name, joined, want)
	}
}
