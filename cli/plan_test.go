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
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	patroniengine "github.com/hactl-dev/hactl/engine/patroni"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

var planAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// validPlan is a plan of replace etcd-1 as replace --dry-run=client -o
// json prints it.
func validPlan() *planDoc {
	pod := &model.Fence{Kind: "Pod", Namespace: "db", Name: "etcd-1", UID: "pod-uid", ResourceVersion: "10", Fingerprint: "fp"}
	d := model.Decision{
		Intent: model.Intent{Action: model.ActionReplace, Member: "etcd-1",
			Options: model.ActionOptions{Verdict: model.VerdictOptions{LagThreshold: 1000}}},
		Cluster: model.ClusterRef{Namespace: "db", Name: "etcd", UID: "sts-uid", Engine: etcdengine.Name},
		Shape:   model.ShapeStaticExisting, Flow: model.FlowLearner, Verb: model.VerbProceed, Phase: model.ActionPhaseRemoving,
		Steps: []model.Step{
			{Kind: model.StepRemoveMember, Member: "etcd-1", MemberID: "m1", Detail: "remove"},
			{Kind: model.StepDeletePod, Member: "etcd-1", Fence: pod, Detail: "delete pod"},
		},
		Fences:      []model.Fence{*pod},
		MemberFence: &model.MemberFence{ID: "m1", Name: "etcd-1", ClusterID: "c1"},
		Leader:      "etcd-0", ClusterID: "c1",
		Notes: []model.Note{}, Blockers: []model.Blocker{},
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
		{name: "a password file", raw: "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n", want: "plan.json is not a hactl plan: it holds text, not a document with fields"},
		{name: "a list", raw: "- a\n- b\n", want: "plan.json is not a hactl plan: it holds a list, not a document with fields"},
		{name: "a field of the wrong type", edit: func(m map[string]any) { m["member"] = 7 }, want: `field member holds a number, where the plan has text`},
		{name: "a negative number", edit: func(m map[string]any) { sub(m, "options")["lagThreshold"] = -1 }, want: `holds the number -1, where the plan has a whole number of 0 or more`},
		{name: "only a YAML comment", raw: "# nothing here\n---\n", want: "is empty"},
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
		{name: "override added to the options only", edit: func(m map[string]any) { sub(m, "options")["acceptNoFailover"] = true }, want: "decision.intent.options.acceptNoFailover"},
		{name: "override added to the decision only", edit: func(m map[string]any) { sub(m, "decision", "intent", "options")["acceptWriteStall"] = true }, want: "decision.intent.options.acceptWriteStall"},
		{name: "statefulset uid edited", edit: func(m map[string]any) { sub(m, "target")["statefulSetUID"] = "other" }, want: "decision.cluster.uid"},
		{name: "fences edited", edit: func(m map[string]any) { sub(m, "decision")["fences"] = []any{} }, want: "decision.fences differ"},
		{name: "bad duration", edit: func(m map[string]any) { sub(m, "options")["timeout"] = "-1s" }, want: "not a positive duration"},
		{name: "wait timeout out of range", edit: func(m map[string]any) { sub(m, "options")["timeout"] = "10000h" }, want: "options.timeout 10000h0m0s is outside"},
		{name: "probe timeout out of range", edit: func(m map[string]any) { sub(m, "options")["probeTimeout"] = "1h" }, want: "options.probeTimeout 1h0m0s is outside"},
		{name: "lag threshold edited in the options only", edit: func(m map[string]any) { sub(m, "options")["lagThreshold"] = uint64(1) << 62 }, want: "decision.intent.options.verdict.lagThreshold"},
		{name: "wal lag threshold edited in the options only", edit: func(m map[string]any) { sub(m, "options")["walLagThreshold"] = 5 }, want: "decision.intent.options.verdict.walLagThreshold"},
		{name: "switchover without its fence", edit: func(m map[string]any) {
			m["action"], m["member"] = "switchover", ""
			in := sub(m, "decision", "intent")
			in["action"], in["member"] = "switchover", ""
			sub(m, "decision")["fences"] = []any{}
			sub(m, "decision")["memberFence"] = nil
			sub(m, "decision")["steps"] = []any{map[string]any{"kind": "switchover", "phase": "restoring", "member": "pg-1", "memberID": "pg-1", "detail": "switch over"}}
		}, want: "decision.steps[0].from"},
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
			// People read these: no Go types.
			for _, goish := range []string{"Go value", "struct {", "json:", "unmarshal"} {
				if strings.Contains(err.Error(), goish) {
					t.Errorf("the error speaks Go (%q): %v", goish, err)
				}
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
		{"lag threshold 0", func(o *ApplyOptions) { o.LagThreshold = 0 }, "--lag-threshold 0 is outside its range"},
		{"lag threshold 2^62", func(o *ApplyOptions) { o.LagThreshold = 1 << 62 }, "--lag-threshold 4611686018427387904 is outside its range"},
		{"lag threshold at its bound", func(o *ApplyOptions) { o.LagThreshold = MaxLagThreshold }, ""},
		{"wal lag threshold too large", func(o *ApplyOptions) { o.WALLagThreshold = MaxWALLagThreshold + 1 }, "--wal-lag-threshold"},
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

// switchoverPlan is a plan of switchover --to pg-1 as switchover
// --dry-run=client -o json prints it: the primary pg-0 is its fence.
func switchoverPlan() *planDoc {
	p := validPlan()
	p.Action, p.Cluster, p.Member = model.ActionSwitchover, "db/pg", "pg-1"
	p.Target.StatefulSet = "pg"
	d := &p.Decision
	d.Intent = model.Intent{Action: model.ActionSwitchover, Member: "pg-1", Options: model.ActionOptions{Verdict: model.VerdictOptions{LagThreshold: 1000}}}
	d.Cluster = model.ClusterRef{Namespace: "db", Name: "pg", UID: "sts-uid", Engine: patroniengine.Name}
	d.Flow, d.Phase, d.Leader, d.ClusterID = model.FlowNone, model.ActionPhaseRestoring, "pg-0", ""
	d.Steps = []model.Step{
		{Kind: model.StepSwitchover, Member: "pg-1", MemberID: "pg-1", From: "pg-0", Detail: "switch over from pg-0 to pg-1"},
		{Kind: model.StepAwaitSwitchover, Member: "pg-1", MemberID: "pg-1", From: "pg-0", Detail: "wait"},
	}
	d.Fences, d.MemberFence = []model.Fence{}, nil
	return p
}

// TestReadPlanAcceptsASwitchoverPlan: a switchover's saved plan is a
// plan apply reads, and it makes it again with --to.
func TestReadPlanAcceptsASwitchoverPlan(t *testing.T) {
	b, err := json.Marshal(switchoverPlan())
	if err != nil {
		t.Fatal(err)
	}
	p, err := readPlan(bytes.NewReader(b), "plan.json")
	if err != nil {
		t.Fatalf("exit %d: %v", codeOf(err), err)
	}
	if got, want := p.replanCommand(), "kubectl hactl switchover pg -n db --to pg-1 --dry-run=client -o json"; got != want {
		t.Errorf("replan %q, want %q", got, want)
	}
}

// TestApplyDecidesWithItsOwnThresholds: the lag thresholds a plan names
// are never what apply decides with: an edited plan cannot loosen the
// quorum check. apply decides with its own --lag-threshold and
// --wal-lag-threshold (the verbs' defaults), and compares.
func TestApplyDecidesWithItsOwnThresholds(t *testing.T) {
	p := validPlan()
	p.Options.LagThreshold, p.Options.WALLagThreshold = 1<<62, 1<<62
	p.Decision.Intent.Options.Verdict.LagThreshold, p.Decision.Intent.Options.Verdict.WALLagThreshold = 1<<62, 1<<62
	o := NewApplyOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	o.plan = p
	ao := o.actionOptions()
	if ao.LagThreshold != 1000 || ao.WALLagThreshold != 0 {
		t.Errorf("apply decides with lag threshold %d and WAL lag threshold %d, the plan's; want 1000 and 0 (its own defaults)", ao.LagThreshold, ao.WALLagThreshold)
	}
	// Nor with anything else the plan's intent says that its command
	// line does not: an edited observation age bound stays apply's.
	p.Decision.Intent.Options.MaxAge, p.Decision.Intent.Options.StaleEntryAfter = 1000*time.Hour, time.Nanosecond
	in := o.actionOptions().intent()
	if v := in.Options.Verdict; v.LagThreshold != 1000 || v.WALLagThreshold != 0 || in.Options.MaxAge != 0 || in.Options.StaleEntryAfter != 0 {
		t.Errorf("apply decides with the intent %+v", in)
	}
	if c := actions.PlanDiff(p.Decision, model.Decision{Intent: in}); !strings.Contains(strings.Join(c, "\n"), "the lag threshold (apply decides with its own --lag-threshold) is now 1000, the plan's was 4611686018427387904") {
		t.Errorf("the plan's threshold is not named as a change: %q", c)
	}
}
