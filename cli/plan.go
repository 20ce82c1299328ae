package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/internal/kubeflags"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

// PlanKind is the kind of a saved plan: what `replace`, `reseed`,
// `restore`, `seed` and `switchover` print with --dry-run=client -o
// json|yaml, and what `apply -f` reads.
const PlanKind = "ActionPlan"

// maxPlanSize bounds a plan file read by apply.
const maxPlanSize = 16 << 20

// The documented ranges of what apply takes from its flags and from a
// plan (docs/actions.md, "Saved plans"). apply decides with its own lag
// thresholds, each within its range; a plan's are only compared with
// them. A plan's timeouts are used unless apply's flags override them,
// and a plan whose timeouts lie outside their ranges is not valid.
const (
	// MaxLagThreshold bounds --lag-threshold (raft entries; 1 at least).
	MaxLagThreshold uint64 = 1_000_000
	// MaxWALLagThreshold bounds --wal-lag-threshold (bytes; 0: the
	// cluster's own).
	MaxWALLagThreshold uint64 = 1 << 40
	// MaxProbeTimeout bounds a plan's probeTimeout.
	MaxProbeTimeout = 10 * time.Minute
	// MaxWaitTimeout bounds a plan's timeout.
	MaxWaitTimeout = 24 * time.Hour
)

// planDoc is a saved plan. It keeps, under the same names, every field of
// the receipts document these dry runs printed before (ActionReceipts for
// replace, reseed and restore; SeedReceipt for seed), and adds the plan:
// when it was made, for which cluster, with which options, and the
// classifier's decision with every fence.
type planDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// The receipts documents' fields.
	Action     model.Action       `json:"action"`
	Cluster    string             `json:"cluster"`
	Member     string             `json:"member"`
	Generation string             `json:"generation,omitempty"`
	Store      string             `json:"store,omitempty"`
	Source     string             `json:"source,omitempty"`
	Phase      model.ActionPhase  `json:"phase,omitempty"`
	Already    bool               `json:"alreadyPublished,omitempty"`
	EntryID    string             `json:"entryID,omitempty"`
	Error      string             `json:"error,omitempty"`
	Manifest   *artifact.Manifest `json:"manifest,omitempty"`
	Result     string             `json:"result"`
	Receipts   []model.Receipt    `json:"receipts"`

	// CreatedAt is when the decision was made; apply refuses a plan older
	// than --max-age.
	CreatedAt time.Time `json:"createdAt"`
	// CreatedBy names the program and process that made the plan.
	CreatedBy string `json:"createdBy,omitempty"`
	// Target is the cluster the plan is for.
	Target actions.PlanTarget `json:"target"`
	// Options are the command's options that shape the decision and its
	// execution.
	Options planOptions `json:"options"`
	// Decision is the classifier's decision: the verb, the steps, every
	// fence, the member to remove, the leader, the cluster ID and, for a
	// restore, the generation's digest (decision.intent.options.source).
	Decision model.Decision `json:"decision"`
}

// planOptions are the options a plan was made with.
type planOptions struct {
	MoveLeader      bool `json:"moveLeader,omitempty"`
	SwitchoverFirst bool `json:"switchoverFirst,omitempty"`
	// AcceptNoFailover and AcceptWriteStall are Patroni's overrides
	// (--accept-no-failover, --accept-write-stall).
	AcceptNoFailover bool   `json:"acceptNoFailover,omitempty"`
	AcceptWriteStall bool   `json:"acceptWriteStall,omitempty"`
	Supersede        bool   `json:"supersede,omitempty"`
	Force            bool   `json:"force,omitempty"`
	Generation       string `json:"generation,omitempty"`
	// Store is the store URL (restore: the one the restore pods read;
	// seed: the one published to; a credential in it is redacted) and
	// StoreSecret the Secret holding its credentials.
	Store       string `json:"store,omitempty"`
	StoreSecret string `json:"storeSecret,omitempty"`
	AgentImage  string `json:"agentImage,omitempty"`
	// LagThreshold and WALLagThreshold (Patroni's replay lag bound in
	// bytes, 0: the cluster's own) are the thresholds the plan was
	// decided with, as decision.intent.options.verdict shows them. apply
	// never decides with them: it decides with its own --lag-threshold
	// and --wal-lag-threshold and refuses a plan made with others.
	LagThreshold    uint64 `json:"lagThreshold"`
	WALLagThreshold uint64 `json:"walLagThreshold,omitempty"`
	// ProbeTimeout and Timeout are durations ("2s", "10m0s"); apply's
	// own flags override them.
	ProbeTimeout string `json:"probeTimeout"`
	Timeout      string `json:"timeout"`
}

// savedPlan is what a verb keeps to print its plan on a client dry run.
type savedPlan struct {
	decision *model.Decision
	// storeURL and storeSecret are the seed store as resolved (seed).
	storeURL, storeSecret string
}

// newPlanDoc fills the plan's own fields from decision d.
func newPlanDoc(ctx context.Context, c connFacts, d model.Decision, o planOptions, warn io.Writer) *planDoc {
	p := &planDoc{APIVersion: status.SchemaVersion, Kind: PlanKind, Decision: d, Options: o,
		CreatedAt: d.DecidedAt.UTC(), CreatedBy: "kubectl-hactl " + buildinfo.Version + " (" + actions.ProcessIdentity() + ")"}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now().UTC()
	}
	p.Target = actions.PlanTarget{Namespace: d.Cluster.Namespace, StatefulSet: d.Cluster.Name, StatefulSetUID: d.Cluster.UID, Server: c.server}
	if c.client != nil {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		t, err := actions.ReadPlanTarget(ctx, c.client, d.Cluster.Namespace, d.Cluster.Name)
		switch {
		case err != nil:
			fmt.Fprintf(warn, "warning: the plan does not name its Kubernetes cluster: %v\n", err)
		case t.KubeSystemUID == "":
			fmt.Fprintf(warn, "warning: the plan does not name its Kubernetes cluster (namespace %s is not readable): apply checks the StatefulSet's UID only\n", actions.KubeSystemNamespace)
		default:
			p.Target.KubeSystemUID = t.KubeSystemUID
		}
	}
	return p
}

// connFacts is what newPlanDoc reads the cluster's identity with.
type connFacts struct {
	client kubernetes.Interface
	server string
}

func connFactsOf(server string, c kubernetes.Interface) connFacts {
	return connFacts{client: c, server: server}
}

// serverOf is the API server URL the connection flags name ("" when
// unknown).
func serverOf(flags *kubeflags.ConfigFlags) string {
	if flags == nil {
		return ""
	}
	cfg, _, err := restConfig(flags)
	if err != nil {
		return ""
	}
	return cfg.Host
}

// planOr returns, on a client dry run that decided, the saved plan to
// print instead of the receipts document doc.
func (o *ActionOptions) planOr(doc receiptsDoc) any {
	dry := actions.DryRun(o.DryRun)
	if dry != actions.DryRunClient || o.saved.decision == nil {
		return doc
	}
	d := *o.saved.decision
	in := d.Intent.Options
	p := newPlanDoc(context.Background(), o.connFacts(), d, planOptions{
		MoveLeader: o.MoveLeader, SwitchoverFirst: o.SwitchoverFirst, Supersede: o.Supersede, Force: o.Force, Generation: o.Generation,
		AcceptNoFailover: o.AcceptNoFailover, AcceptWriteStall: o.AcceptWriteStall,
		WALLagThreshold: o.WALLagThreshold, Store: in.SeedStore, StoreSecret: in.StoreSecret, AgentImage: in.AgentImage,
		LagThreshold: o.LagThreshold, ProbeTimeout: o.ProbeTimeout.String(), Timeout: o.Timeout.String(),
	}, o.ErrOut)
	p.Action, p.Cluster, p.Member, p.EntryID, p.Result, p.Receipts = doc.Action, doc.Cluster, doc.Member, doc.EntryID, doc.Result, doc.Receipts
	if o.Action == model.ActionRestore {
		p.Generation = o.Generation
	}
	return p
}

func (o *ActionOptions) connFacts() connFacts {
	return connFactsOf(serverOf(o.configFlags), o.client)
}

// planOr returns, on a client dry run that decided, the saved plan to
// print instead of the seed receipt doc.
func (o *SeedOptions) planOr(doc *seedDoc) any {
	if o.DryRun != string(actions.DryRunClient) || o.saved.decision == nil {
		return doc
	}
	p := newPlanDoc(context.Background(), connFactsOf(serverOf(o.configFlags), o.client), *o.saved.decision, planOptions{
		Supersede: o.Supersede, Generation: o.Generation,
		Store: artifact.RedactURL(o.saved.storeURL), StoreSecret: o.saved.storeSecret,
		LagThreshold: o.LagThreshold, ProbeTimeout: o.ProbeTimeout.String(), Timeout: o.Timeout.String(),
	}, o.ErrOut)
	p.Action, p.Cluster, p.Member = model.ActionSeed, doc.Cluster, o.Member
	p.Generation, p.Store, p.Source, p.Phase, p.Already = doc.Generation, doc.Store, doc.Source, doc.Phase, doc.Already
	p.EntryID, p.Error, p.Manifest, p.Result, p.Receipts = doc.EntryID, doc.Error, doc.Manifest, doc.Result, doc.Receipts
	return p
}

// readPlan reads a saved plan (JSON, or YAML as -o yaml prints it) and
// validates it. Every problem is a usage error (exit 2).
func readPlan(r io.Reader, name string) (*planDoc, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPlanSize+1))
	if err != nil {
		return nil, usageError("reading the plan %s: %v", name, err)
	}
	if len(b) > maxPlanSize {
		return nil, usageError("the plan %s is larger than %d bytes: not a plan", name, maxPlanSize)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, usageError("the plan %s is empty", name)
	}
	js := b
	if t := bytes.TrimSpace(b); t[0] != '{' {
		if js, err = yaml.YAMLToJSON(b); err != nil {
			return nil, usageError("the plan %s is neither JSON nor YAML: %v", name, err)
		}
	}
	switch t := bytes.TrimSpace(js); {
	case string(t) == "null":
		return nil, usageError("the plan %s is empty", name)
	case len(t) > 0 && t[0] == '[':
		return nil, usageError("%s is not a hactl plan: it holds a list, not a document with fields (make one with 'kubectl hactl replace|reseed|restore|seed|switchover ... --dry-run=client -o json > plan.json')", name)
	case len(t) > 0 && t[0] != '{':
		return nil, usageError("%s is not a hactl plan: it holds text, not a document with fields (make one with 'kubectl hactl replace|reseed|restore|seed|switchover ... --dry-run=client -o json > plan.json')", name)
	}
	// Only apiVersion and kind first: a document of another kind gets a
	// clear message rather than a list of unknown fields.
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, usageError("the plan %s does not parse: %s", name, format.JSONProblem(err, "the plan"))
	}
	switch {
	case head.APIVersion == "" && head.Kind == "":
		return nil, usageError("%s is not a hactl plan: it has no apiVersion and kind (make one with 'kubectl hactl replace|reseed|restore|seed|switchover ... --dry-run=client -o json > plan.json')", name)
	case head.APIVersion != status.SchemaVersion:
		return nil, usageError("the plan %s has apiVersion %q; this kubectl-hactl (%s) reads %s: make the plan again with this version", name, head.APIVersion, buildinfo.Version, status.SchemaVersion)
	case head.Kind != PlanKind:
		return nil, usageError("%s is a %q document, not a plan (kind %s): make one with --dry-run=client -o json", name, head.Kind, PlanKind)
	}
	var p planDoc
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, usageError("the plan %s does not parse: %s (a plan made by another kubectl-hactl version? make it again with this one)", name, format.JSONProblem(err, "the plan"))
	}
	if dec.More() {
		return nil, usageError("the plan %s holds more than one document", name)
	}
	if err := p.validate(); err != nil {
		return nil, usageError("the plan %s is not valid: %v", name, err)
	}
	return &p, nil
}

// validate checks that a plan is complete and agrees with itself.
func (p *planDoc) validate() error {
	if err := p.complete(); err != nil {
		return err
	}
	if err := p.agrees(); err != nil {
		return err
	}
	return p.bounded()
}

// complete checks that the plan holds every field its action needs.
func (p *planDoc) complete() error {
	var missing []string
	need := func(ok bool, field string) {
		if !ok {
			missing = append(missing, field)
		}
	}
	d := p.Decision
	need(p.Action != "", "action")
	need(p.Cluster != "", "cluster")
	need(!p.CreatedAt.IsZero(), "createdAt")
	need(p.Target.Namespace != "", "target.namespace")
	need(p.Target.StatefulSet != "", "target.statefulSet")
	need(p.Target.StatefulSetUID != "", "target.statefulSetUID")
	need(p.Options.LagThreshold > 0, "options.lagThreshold")
	need(p.Options.ProbeTimeout != "", "options.probeTimeout")
	need(p.Options.Timeout != "", "options.timeout")
	need(d.Intent.Action != "", "decision.intent.action")
	need(d.Cluster.UID != "", "decision.cluster.uid")
	need(d.Cluster.Engine != "", "decision.cluster.engine")
	need(d.Verb != "", "decision.verb")
	need(!d.DecidedAt.IsZero(), "decision.decidedAt")
	switch p.Action {
	case model.ActionReplace, model.ActionReseed:
		need(p.Member != "", "member")
	case model.ActionRestore:
		need(p.Options.Generation != "", "options.generation")
		need(p.Options.Store != "", "options.store")
		need(p.Options.AgentImage != "", "options.agentImage")
		if d.Verb == model.VerbProceed {
			need(d.Intent.Options.Source != nil && d.Intent.Options.Source.Digest != "", "decision.intent.options.source.digest")
		}
	case model.ActionSeed:
		need(p.Options.Generation != "", "options.generation")
		need(p.Options.Store != "", "options.store")
		need(d.Intent.Options.SeedStore != "", "decision.intent.options.seedStore")
	case model.ActionSwitchover:
		// The primary as observed is the switchover's fence: every step
		// that hands over names it.
		for i, st := range d.Steps {
			if st.Kind == model.StepSwitchover || st.Kind == model.StepAwaitSwitchover {
				need(st.From != "", fmt.Sprintf("decision.steps[%d].from", i))
			}
		}
	case "":
	default:
		return fmt.Errorf("unknown action %q (a plan is for replace, reseed, restore, seed or switchover)", p.Action)
	}
	if d.Verb == model.VerbProceed {
		need(len(d.Steps) > 0, "decision.steps")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// agrees checks that what the plan says twice (its options and its
// decision's intent, its target and its decision's cluster) says the same.
func (p *planDoc) agrees() error {
	d := p.Decision
	for _, f := range []struct {
		field string
		a, b  any
	}{
		{"cluster", p.Cluster, p.Target.Namespace + "/" + p.Target.StatefulSet},
		{"decision.cluster.namespace", d.Cluster.Namespace, p.Target.Namespace},
		{"decision.cluster.name", d.Cluster.Name, p.Target.StatefulSet},
		{"decision.cluster.uid", d.Cluster.UID, p.Target.StatefulSetUID},
		{"decision.intent.action", d.Intent.Action, p.Action},
		{"decision.intent.member", d.Intent.Member, p.Member},
		{"decision.intent.options.moveLeader", d.Intent.Options.MoveLeader, p.Options.MoveLeader},
		{"decision.intent.options.switchoverFirst", d.Intent.Options.SwitchoverFirst, p.Options.SwitchoverFirst},
		{"decision.intent.options.acceptNoFailover", d.Intent.Options.AcceptNoFailover, p.Options.AcceptNoFailover},
		{"decision.intent.options.acceptWriteStall", d.Intent.Options.AcceptWriteStall, p.Options.AcceptWriteStall},
		{"decision.intent.options.supersede", d.Intent.Options.Supersede, p.Options.Supersede},
		{"decision.intent.options.force", d.Intent.Options.Force, p.Options.Force},
		{"decision.intent.options.generation", d.Intent.Options.Generation, p.Options.Generation},
		{"decision.intent.options.verdict.lagThreshold", d.Intent.Options.Verdict.LagThreshold, p.Options.LagThreshold},
		{"decision.intent.options.verdict.walLagThreshold", d.Intent.Options.Verdict.WALLagThreshold, p.Options.WALLagThreshold},
	} {
		if f.a != f.b {
			return fmt.Errorf("%s is %v, but the plan says %v elsewhere: was it edited? make it again", f.field, f.a, f.b)
		}
	}
	if p.Action == model.ActionRestore {
		// what the restore pods are made of
		for _, f := range []struct{ field, a, b string }{
			{"decision.intent.options.seedStore", d.Intent.Options.SeedStore, p.Options.Store},
			{"decision.intent.options.storeSecret", d.Intent.Options.StoreSecret, p.Options.StoreSecret},
			{"decision.intent.options.agentImage", d.Intent.Options.AgentImage, p.Options.AgentImage},
		} {
			if f.a != f.b {
				return fmt.Errorf("%s is %q, but the plan says %q elsewhere: was it edited? make it again", f.field, f.a, f.b)
			}
		}
	}
	return nil
}

// bounded checks the durations' ranges and that the fences listed are
// those the steps carry.
func (p *planDoc) bounded() error {
	d := p.Decision
	for _, f := range []struct {
		field, s string
		max      time.Duration
	}{{"options.probeTimeout", p.Options.ProbeTimeout, MaxProbeTimeout}, {"options.timeout", p.Options.Timeout, MaxWaitTimeout}} {
		v, err := time.ParseDuration(f.s)
		switch {
		case err != nil || v <= 0:
			return fmt.Errorf("%s: %q is not a positive duration", f.field, f.s)
		case v > f.max:
			return fmt.Errorf("%s %s is outside its range (more than 0, at most %s)", f.field, v, f.max)
		}
	}
	// The fences listed are those the steps carry (a restore's scale
	// steps fence the StatefulSet, listed with its steps only).
	var fromSteps []model.Fence
	for _, s := range d.Steps {
		if s.Fence != nil && s.Fence.Kind != "StatefulSet" {
			fromSteps = append(fromSteps, *s.Fence)
		}
	}
	if !sameFences(fromSteps, d.Fences) {
		return errors.New("decision.fences differ from the fences of decision.steps: was it edited? make it again")
	}
	return nil
}

func sameFences(a, b []model.Fence) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[model.Fence]int{}
	for _, f := range a {
		seen[f]++
	}
	for _, f := range b {
		if seen[f] == 0 {
			return false
		}
		seen[f]--
	}
	return true
}

// age is how old a plan is at now: from createdAt, or from the
// observation its decision was made on when that is earlier.
func (p *planDoc) age(now time.Time) time.Duration {
	from := p.CreatedAt
	if o := p.Decision.ObservedAt; !o.IsZero() && o.Before(from) {
		from = o
	}
	return now.Sub(from)
}

// replanCommand is the command that makes this plan again.
func (p *planDoc) replanCommand() string {
	return p.command("--dry-run=client", "-o", "json")
}

// command is the verb's command line this plan was made with, followed
// by extra.
func (p *planDoc) command(extra ...string) string {
	args := []string{"kubectl hactl", string(p.Action), p.Target.StatefulSet}
	if p.Action == model.ActionReplace || p.Action == model.ActionReseed {
		args = append(args, p.Member)
	}
	args = append(args, "-n", p.Target.Namespace)
	if p.Options.Generation != "" {
		args = append(args, "--generation", p.Options.Generation)
	}
	if p.Action == model.ActionSwitchover && p.Member != "" {
		args = append(args, "--to", p.Member)
	}
	if p.Action == model.ActionSeed && p.Member != "" {
		args = append(args, "--member", p.Member)
	}
	for _, f := range []struct {
		on   bool
		flag string
	}{{p.Options.MoveLeader, "--move-leader"}, {p.Options.SwitchoverFirst, "--switchover-first"},
		{p.Options.AcceptNoFailover, "--accept-no-failover"}, {p.Options.AcceptWriteStall, "--accept-write-stall"},
		{p.Options.Supersede, "--supersede"}, {p.Options.Force, "--force"}} {
		if f.on {
			args = append(args, f.flag)
		}
	}
	return strings.Join(append(args, extra...), " ")
}
