package adversarial

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// The checks themselves, on audit events and member lists written by
// hand: each rule the suite enforces reports the violation it exists for.

func event(verb, resource, name, holder string, at time.Time, body string) auditEvent {
	e := auditEvent{Stage: "ResponseComplete", Verb: verb, RequestReceived: at, StageTimestamp: at.Add(time.Millisecond),
		RequestObject: json.RawMessage(body)}
	e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name = resource, namespace, name
	e.ResponseStatus.Code = 200
	if holder != "" {
		e.UserAgent = "kubectl-hactl/v0 (linux/amd64) kubernetes/x " + holder
	}
	return e
}

func leaseWrite(holder string, at time.Time) auditEvent {
	body := `{"spec":{}}`
	if holder != "" {
		body = `{"spec":{"holderIdentity":"` + holder + `"}}`
	}
	e := event("update", "leases", "hactl-"+cluster, "", at, body)
	return e
}

func TestLockDisciplineCheck(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	a, b := "hactl/h/p/1/aa", "hactl/h/p/2/bb"
	del := func(holder string, s int) auditEvent {
		return event("delete", "pods", cluster+"-1", holder, at(s), `{"preconditions":{"uid":"u1"}}`)
	}
	cases := []struct {
		name   string
		events []auditEvent
		want   string // "" = no violation
	}{
		{"holder writes", []auditEvent{leaseWrite(a, at(0)), del(a, 1), leaseWrite("", at(2)), leaseWrite(b, at(3)), del(b, 4)}, ""},
		{"a write after the lock was taken over", []auditEvent{leaseWrite(a, at(0)), del(a, 1), leaseWrite(b, at(40)), del(a, 41)}, `left it to "` + b},
		{"a write after release", []auditEvent{leaseWrite(a, at(0)), leaseWrite("", at(2)), del(a, 3)}, `left it to ""`},
		{"a write without the lock", []auditEvent{del(a, 1)}, "never taken"},
		{"other clients are not checked", []auditEvent{del("", 1)}, ""},
		{"overlapping holders", []auditEvent{leaseWrite(a, at(0)), del(a, 1), leaseWrite(b, at(2)), del(b, 3), leaseWrite(a, at(4)), del(a, 5)}, "overlap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, _ := checkLockDiscipline(c.events, cluster)
			got := strings.Join(v, "\n")
			switch {
			case c.want == "" && got != "":
				t.Errorf("violations %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("violations %q, want one containing %q", got, c.want)
			}
		})
	}
}

func TestGuardedAndDeletedUID(t *testing.T) {
	now := time.Now()
	if !guarded(event("update", "configmaps", "hactl-"+cluster, "", now, "{}"), cluster) {
		t.Error("the ledger is not guarded")
	}
	if guarded(event("update", "configmaps", "other", "", now, "{}"), cluster) {
		t.Error("another ConfigMap is guarded")
	}
	st := event("patch", "pods", cluster+"-0", "", now, "{}")
	st.ObjectRef.Subresource = "status"
	if guarded(st, cluster) {
		t.Error("a status write is guarded")
	}
	if u := deletedUID(event("delete", "pods", "x", "", now, `{"preconditions":{"uid":"u9","resourceVersion":"3"}}`)); u != "u9" {
		t.Errorf("uid %q", u)
	}
	if u := deletedUID(event("delete", "pods", "x", "", now, `{"propagationPolicy":"Background"}`)); u != "" {
		t.Errorf("uid %q from a delete without preconditions", u)
	}
	dry := event("delete", "pods", "x", "", now, "{}")
	dry.RequestURI = "/api/v1/namespaces/x/pods/x?dryRun=All"
	if dry.ok() {
		t.Error("a dry run counts as a write")
	}
}

func TestMemberChanges(t *testing.T) {
	p := &probe{lists: [][]model.Peer{
		{{ID: "a"}, {ID: "b"}, {ID: "c"}},
		{{ID: "a"}, {ID: "b"}},
		{{ID: "a"}, {ID: "b"}, {ID: "d", IsLearner: true}},
		{{ID: "a"}, {ID: "b"}, {ID: "d"}},
	}}
	var got []string
	for _, c := range p.changes() {
		got = append(got, string(c.step)+" "+c.id)
	}
	want := []string{string(model.StepRemoveMember) + " c", string(model.StepAddLearner) + " d", string(model.StepPromoteLearner) + " d"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("changes %v, want %v", got, want)
	}
}
