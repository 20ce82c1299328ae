package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

var planAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// validPlan is a plan of replace etcd-1 as replace --dry-run=client -o
// json prints it.
func validPlan() *planDoc {
	pod := &model.Fence{Kind: "Pod", Namespace: "db", Name: "etcd-1", UID: "pod-uid", ResourceVersion: "10", Fingerprint: "fp"}
	d := classify.Decision{
		Intent:  classify.Intent{Action: model.ActionReplace, Member: "etcd-1"},
		Cluster: classify.ClusterRef{Namespace: "db", Name: "etcd", UID: "sts-uid", Engine: model.EngineEtcd},
		Shape:   model.ShapeStaticExisting, Flow: classify.FlowLearner, Verb: classify.VerbProceed, Phase: model.ActionPhaseRemoving,
		Steps: []classify.Step{
			{Kind: model.StepRemoveMember, Member: "etcd-1", MemberID: "m1", Detail: "remove"},
			{Kind: model.StepDeletePod, Member: "etcd-1", Fence: pod, Detail: "delete pod"},
		},
		Fences:      []model.Fence{*pod},
		MemberFence: &model.MemberFence{ID: "m1", Name: "etcd-1", ClusterID: "c1"},
		Leader:      "etcd-0", ClusterID: "c1",
		Notes: []classify.Note{}, Blockers: []classify.Blocker{},
		ObservedAt: planAt, DecidedAt: planAt,
	}
	return &planDoc{APIVersion: status.SchemaVersion, Kind: PlanKind, Action: model.ActionReplace, Cluster: "db/etcd", Member: "etcd-1",
		Result: "done", Receipts: []model.Receipt{}, CreatedAt: planAt, CreatedBy: "kubectl-hactl test",
		Target:   actions.PlanTarget{Namespace: "db", StatefulSet: "etcd", StatefulSetUID: "sts-uid", KubeSystemUID: "ks-uid"},
		Options:  planOptions{LagThreshold: 1000, ProbeTimeout: "2s", Timeout: "10m0s"},
		Decision: d}
}

// planJSON is p as a generic document, to edit as a user (or an
// attacker) would.
func planJSON(t *testing.T, p *planDoc) map[string]any {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sub(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

func encode(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadPlanAcceptsWhatTheVerbsPrint(t *testing.T) {
	b, err := json.MarshalIndent(validPlan(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"json": b, "yaml": y} {
		p, err := readPlan(bytes.NewReader(in), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Decision.MemberFence.ID != "m1" || p.Target.StatefulSetUID != "sts-uid" || !p.CreatedAt.Equal(planAt) {
			t.Errorf("%s: read %+v", name, p)
		}
		if c := actions.PlanDiff(validPlan().Decision, p.Decision); len(c) != 0 {
			t.Errorf("%s: the decision read back differs: %q", name, c)
		}
	}
}

// TestReadPlanRefusesInvalidPlans: each broken or edited plan is a usage
// error (exit 2) that says what is wrong.
func TestReadPlanRefusesInvalidPlans(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		raw  string
		want string
	}{
		{name: "empty", raw: "  \n", want: "empty"},
		{name: "not a document", raw: "[1, 2", want: "neither JSON nor YAML"},
		{name: "no apiVersion or kind", raw: `{"action": "replace"}`, want: "not a hactl plan"},
		{name: "unknown apiVersion", edit: func(m map[string]any) { m["apiVersion"] = "hactl.dev/v2" }, want: `apiVersion "hactl.dev/v2"`},
		{name: "receipts, not a plan", edit: func(m map[string]any) { m["kind"] = "ActionReceipts" }, want: `"ActionReceipts" document, not a plan`},
		{name: "unknown field", edit: func(m map[string]any) { m["approvedBy"] = "me" }, want: "unknown field"},
		{name: "unknown action", edit: func(m map[string]any) { m["action"] = "explode" }, want: `unknown action "explode"`},
		{name: "no createdAt", edit: func(m map[string]any) { delete(m, "createdAt") }, want: "missing createdAt"},
		{name: "no statefulset uid", edit: func(m map[string]any) { delete(sub(m, "target"), "statefulSetUID") }, want: "target.statefulSetUID"},
		{name: "no member", edit: func(m map[string]any) {
			m["member"] = ""
			sub(m, "decision", "intent")["member"] = ""
		}, want: "missing member"},
		{name: "no decision", edit: func(m map[string]any) { delete(m, "decision") }, want: "decision.verb"},
		{name: "no steps", edit: func(m map[string]any) { sub(m, "decision")["steps"] = []any{} }, want: "decision.steps"},
		{name: "member edited", edit: func(m map[string]any) { m["member"] = "etcd-2" }, want: "decision.intent.member is etcd-1"},
		{name: "option edited", edit: func(m map[string]any) { sub(m, "options")["moveLeader"] = true }, want: "decision.intent.options.moveLeader"},
		{name: "statefulset uid edited", edit: func(m map[string]any) { sub(m, "target")["statefulSetUID"] = "other" }, want: "decision.cluster.uid"},
		{name: "fences edited", edit: func(m map[string]any) { sub(m, "decision")["fences"] = []any{} }, want: "decision.fences differ"},
		{name: "bad duration", edit: func(m map[string]any) { sub(m, "options")["timeout"] = "-1s" }, want: "not a positive duration"},
		{name: "restore without digest", edit: func(m map[string]any) {
			m["action"] = "restore"
			m["member"] = ""
			sub(m, "decision", "intent")["action"] = "restore"
			sub(m, "decision", "intent")["member"] = ""
			o := sub(m, "options")
			o["generation"], o["store"], o["agentImage"] = "g1", "s3://b", "img"
			io := sub(m, "decision", "intent", "options")
			io["generation"], io["seedStore"], io["agentImage"] = "g1", "s3://b", "img"
		}, want: "decision.intent.options.source.digest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.raw)
			if c.edit != nil {
				m := planJSON(t, validPlan())
				c.edit(m)
				in = encode(t, m)
			}
			_, err := readPlan(bytes.NewReader(in), "plan.json")
			if codeOf(err) != ExitUsage || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("exit %d, %v; want exit 2 naming %q", codeOf(err), err, c.want)
			}
		})
	}
}

func TestApplyRefusesOldPlans(t *testing.T) {
	o := NewApplyOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	o.plan = validPlan()
	for _, c := range []struct {
		now    time.Time
		maxAge time.Duration
		want   string
	}{
		{planAt.Add(14 * time.Minute), DefaultPlanMaxAge, ""},
		{planAt.Add(16 * time.Minute), DefaultPlanMaxAge, "the plan is 16m0s old"},
		{planAt.Add(16 * time.Minute), 20 * time.Minute, ""},
		{planAt.Add(240 * time.Hour), 0, ""}, // 0: no expiry
		{planAt.Add(-30 * time.Second), DefaultPlanMaxAge, ""},
		{planAt.Add(-10 * time.Minute), DefaultPlanMaxAge, "made in the future"},
	} {
		o.now, o.MaxAge = func() time.Time { return c.now }, c.maxAge
		err := o.checkAge()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("at %s with --max-age %s: %v", c.now, c.maxAge, err)
		case c.want != "" && (codeOf(err) != ExitFenceConflict || !errors.Is(err, actions.ErrFenceConflict) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "kubectl hactl replace etcd etcd-1 -n db --dry-run=client -o json")):
			t.Errorf("at %s with --max-age %s: exit %d, %v; want exit 6 naming %q and how to re-plan", c.now, c.maxAge, codeOf(err), err, c.want)
		}
	}
	// The age counts from the observation when createdAt was moved later.
	p := validPlan()
	p.CreatedAt = planAt.Add(time.Hour)
	o.plan, o.MaxAge, o.now = p, DefaultPlanMaxAge, func() time.Time { return planAt.Add(time.Hour) }
	if err := o.checkAge(); codeOf(err) != ExitFenceConflict {
		t.Errorf("a plan whose createdAt was moved later than its observation: %v", err)
	}
}

func TestApplyValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plan.json")
	b, _ := json.Marshal(validPlan())
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	streams := genericiooptions.IOStreams{In: bytes.NewReader(b), Out: io.Discard, ErrOut: io.Discard}
	for _, c := range []struct {
		name string
		set  func(o *ApplyOptions)
		want string
	}{
		{"file", func(o *ApplyOptions) {}, ""},
		{"stdin", func(o *ApplyOptions) { o.Filename = "-" }, ""},
		{"no file", func(o *ApplyOptions) { o.Filename = "" }, "-f FILE"},
		{"missing file", func(o *ApplyOptions) { o.Filename = filepath.Join(dir, "nope.json") }, "no such file"},
		{"another namespace", func(o *ApplyOptions) { o.nsFlag = "prod" }, `plan is for namespace "db"`},
		{"same namespace", func(o *ApplyOptions) { o.nsFlag = "db" }, ""},
		{"negative max age", func(o *ApplyOptions) { o.MaxAge = -time.Second }, "--max-age"},
		{"bad dry run", func(o *ApplyOptions) { o.DryRun = "maybe" }, "--dry-run"},
		{"bad output", func(o *ApplyOptions) { o.Output = "table" }, "--output"},
	} {
		o := NewApplyOptions(nil, streams)
		o.Filename = file
		c.set(o)
		err := o.Validate()
		if (c.want == "") != (err == nil) || (err != nil && (codeOf(err) != ExitUsage || !strings.Contains(err.Error(), c.want))) {
			t.Errorf("%s: exit %d, %v; want %q", c.name, codeOf(err), err, c.want)
		}
	}
}

func TestApplyHelpDocumentsExitCodes(t *testing.T) {
	var out bytes.Buffer
	if code := Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{"apply", "--help"}); code != 0 {
		t.Fatalf("apply --help exited %d", code)
	}
	for _, want := range []string{"kubectl hactl apply -f PLAN", "--max-age", "--yes", "--dry-run", "6  the plan does not match the cluster", "Examples:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("apply --help lacks %q", want)
		}
	}
	// Shell completion offers the verb, and plan files for -f.
	for args, want := range map[string]string{"__complete|": "\napply\t", "__complete|apply|-f|": "json\nyaml\nyml\n"} {
		out.Reset()
		Run(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: io.Discard}, strings.Split(args, "|"))
		if !strings.Contains("\n"+out.String(), want) {
			t.Errorf("completion %q lacks %q:\n%s", args, want, out.String())
		}
	}
}
