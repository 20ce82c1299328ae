package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/model"
)

// A saved plan ("plan now, apply later, exactly this") is a decision
// printed by `--dry-run=client -o json` and applied by `kubectl hactl
// apply`. The document itself is the CLI's; what a plan is held against is
// here: the cluster it names (PlanTarget, TargetDiff) and the decision made
// again under the lock (PlanDiff, Executor.Plan).

// PlanTarget names the cluster a saved plan was made for.
type PlanTarget struct {
	Namespace      string `json:"namespace"`
	StatefulSet    string `json:"statefulSet"`
	StatefulSetUID string `json:"statefulSetUID"`
	// KubeSystemUID is the UID of the Kubernetes cluster's kube-system
	// namespace: made once, when the cluster's API server first starts,
	// and never renamed, it identifies the Kubernetes cluster however it
	// is reached (another server URL, a proxy, another context name) and
	// tells it from a new cluster at the same URL. "" when the planner
	// may not read that namespace.
	KubeSystemUID string `json:"kubeSystemUID,omitempty"`
	// Server is the API server URL the plan was made through. It is shown,
	// never compared: one cluster has many URLs, and one URL (localhost
	// through a tunnel, a load balancer) can reach different clusters.
	Server string `json:"server,omitempty"`
}

// KubeSystemNamespace is the namespace whose UID identifies a Kubernetes
// cluster.
const KubeSystemNamespace = "kube-system"

// ReadPlanTarget reads what identifies cluster ns/name now: its
// StatefulSet's UID and the kube-system namespace's UID. A kube-system
// namespace this user may not read (a namespaced role) leaves
// KubeSystemUID empty; the StatefulSet's UID, random and unique, still
// tells one cluster's StatefulSet from any other's.
func ReadPlanTarget(ctx context.Context, c kubernetes.Interface, ns, name string) (PlanTarget, error) {
	t := PlanTarget{Namespace: ns, StatefulSet: name}
	sts, err := c.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// no UID: TargetDiff reports the StatefulSet gone
	case err != nil:
		return t, fmt.Errorf("reading statefulset %s/%s: %w", ns, name, err)
	default:
		t.StatefulSetUID = string(sts.UID)
	}
	k, err := c.CoreV1().Namespaces().Get(ctx, KubeSystemNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err):
	case err != nil:
		return t, fmt.Errorf("reading namespace %s (the Kubernetes cluster's identity): %w", KubeSystemNamespace, err)
	default:
		t.KubeSystemUID = string(k.UID)
	}
	return t, nil
}

// TargetDiff lists how the cluster found now differs from the one a plan
// was made for, empty when it is the same: the same Kubernetes cluster
// (kube-system UID, compared when both are known) and the same
// StatefulSet (namespace, name, UID).
func TargetDiff(plan, now PlanTarget) []string {
	var out []string
	if plan.KubeSystemUID != "" && now.KubeSystemUID != "" && plan.KubeSystemUID != now.KubeSystemUID {
		out = append(out, fmt.Sprintf("the plan was made against another Kubernetes cluster (kube-system uid %s%s, this one %s%s): check your kubeconfig context",
			plan.KubeSystemUID, via(plan.Server), now.KubeSystemUID, via(now.Server)))
	}
	if plan.Namespace != now.Namespace || plan.StatefulSet != now.StatefulSet {
		out = append(out, fmt.Sprintf("the plan is for StatefulSet %s/%s, not %s/%s", plan.Namespace, plan.StatefulSet, now.Namespace, now.StatefulSet))
		return out
	}
	switch {
	case now.StatefulSetUID == "":
		out = append(out, fmt.Sprintf("StatefulSet %s/%s (uid %s) no longer exists", plan.Namespace, plan.StatefulSet, plan.StatefulSetUID))
	case plan.StatefulSetUID != now.StatefulSetUID:
		out = append(out, fmt.Sprintf("StatefulSet %s/%s is another one now: uid %s, the plan's %s (deleted and created again, or another cluster)",
			plan.Namespace, plan.StatefulSet, now.StatefulSetUID, plan.StatefulSetUID))
	}
	return out
}

func via(server string) string {
	if server == "" {
		return ""
	}
	return " via " + server
}

// PlanDiff lists, in words and sorted, what a decision made now would do
// differently from a saved plan's decision; empty when it would do
// exactly what the plan says. What counts:
//
//   - the verb (a plan that proceeded and now refuses, awaits or is done);
//   - the intent: action, member and every option, the verdict's
//     thresholds included, compared by its JSON so that an option added
//     later is compared too (PlanOptionsNotCompared lists the exceptions:
//     the lock holder identity), and for a restore the generation's
//     identity and manifest digest;
//   - the cluster (namespace, name, StatefulSet UID, engine), its shape
//     and flow;
//   - every fence: an object to delete or scale by kind and name, with
//     its UID, and its resourceVersion unless only its status moved on
//     (the same fingerprint of metadata and spec, as the executor holds
//     fences: a crash-looping pod's status moves all the time);
//   - the engine member to remove (ID, name, peer URLs, cluster ID,
//     learner), the members the steps name and their member IDs;
//   - the steps, in order, with the member, member ID, peer URLs and
//     replicas each one names;
//   - the leader, the engine cluster ID, what is replaced (pod, volume,
//     member), the target's peer URLs, the ledger entry resumed or
//     superseded, the replicas a restore scales back to, and the quorum's
//     size (voters, quorum, whether the target votes, whether the check
//     applies and holds);
//   - the quorum by the lags observed: a voter that was within the lag
//     threshold when the plan was made (the smaller of the plan's and
//     the one the decision was made with now) and trails the leader by
//     more now.
//
// What does not count: when the decision was made and observed, the
// step details' wording (a seed source's applied index, say), notes, the
// status reasons, lags that move within the threshold, which voters are
// healthy for other reasons than their lag when the quorum check still
// holds, and a fence's resourceVersion moved by status alone.
func PlanDiff(plan, now model.Decision) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	if plan.Verb != now.Verb {
		why := ""
		var parts []string
		for _, b := range now.Blockers {
			parts = append(parts, fmt.Sprintf("%s: %s", b.Code, b.Detail))
		}
		if len(parts) > 0 {
			why = ": " + strings.Join(parts, "; ")
		}
		add("the decision is now %s, the plan's was %s%s", now.Verb, plan.Verb, why)
	}
	intentDiff(add, plan.Intent, now.Intent)

	// The cluster by its identity (its owner's kind follows from its UID).
	if a, b := plan.Cluster, now.Cluster; a.Namespace != b.Namespace || a.Name != b.Name || a.UID != b.UID || a.Engine != b.Engine {
		add("the cluster is now %s/%s (uid %s, %s), the plan's was %s/%s (uid %s, %s)", b.Namespace, b.Name, b.UID, b.Engine, a.Namespace, a.Name, a.UID, a.Engine)
	}
	if plan.Shape != now.Shape {
		add("the bootstrap shape is now %s, the plan's was %s", now.Shape, plan.Shape)
	}
	if plan.Flow != now.Flow {
		add("the flow is now %s, the plan's was %s", now.Flow, plan.Flow)
	}
	if plan.Leader != now.Leader {
		add("the leader is now %s, the plan's was %s", orNone(now.Leader), orNone(plan.Leader))
	}
	if plan.ClusterID != now.ClusterID {
		add("the engine cluster ID is now %s, the plan's was %s", orNone(now.ClusterID), orNone(plan.ClusterID))
	}
	memberFenceDiff(add, plan.MemberFence, now.MemberFence)
	fencesDiff(add, plan, now)
	stepsDiff(add, plan.Steps, now.Steps)

	if a, b := plan.Replaced, now.Replaced; a.PodUID != b.PodUID || a.PVCUID != b.PVCUID || a.MemberID != b.MemberID || !sameSet(a.PeerURLs, b.PeerURLs) {
		add("what is replaced is now pod uid %s, volume uid %s, member %s (%s); the plan's was pod uid %s, volume uid %s, member %s (%s)",
			orNone(b.PodUID), orNone(b.PVCUID), orNone(b.MemberID), strings.Join(b.PeerURLs, ","),
			orNone(a.PodUID), orNone(a.PVCUID), orNone(a.MemberID), strings.Join(a.PeerURLs, ","))
	}
	if !sameSet(plan.PeerURLs, now.PeerURLs) {
		add("the member's peer URLs are now %v, the plan's were %v", now.PeerURLs, plan.PeerURLs)
	}
	if plan.Resume != now.Resume {
		add("the decision now resumes ledger entry %s, the plan's resumed %s", orNone(now.Resume), orNone(plan.Resume))
	}
	if !sameSet(plan.Supersedes, now.Supersedes) {
		add("the decision now supersedes %v, the plan's superseded %v", now.Supersedes, plan.Supersedes)
	}
	if plan.Replicas != now.Replicas {
		add("the restore now scales back to %d replicas, the plan's to %d", now.Replicas, plan.Replicas)
	}
	lagsDiff(add, plan, now)
	if a, b := plan.Quorum, now.Quorum; a.Voters != b.Voters || a.Quorum != b.Quorum || a.TargetVotes != b.TargetVotes || a.Checked != b.Checked || a.OK != b.OK {
		add("the quorum is now %d voters, quorum %d (target votes %v, check %v, ok %v); the plan's was %d voters, quorum %d (target votes %v, check %v, ok %v)",
			b.Voters, b.Quorum, b.TargetVotes, b.Checked, b.OK, a.Voters, a.Quorum, a.TargetVotes, a.Checked, a.OK)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// PlanOptionsNotCompared are the fields of model.ActionOptions, by their Go
// names, a saved plan's intent is not held to. Every other field, the
// verdict's thresholds and any field added later included, is compared
// by its JSON (optionsDiff): a plan shows it and apply refuses a plan
// that differs in it.
//
//   - LockHolder is the caller's own identity on the cluster's lock:
//     apply runs as another process than the one that planned.
var PlanOptionsNotCompared = []string{"LockHolder"}

// optionName is how an option is named in a refusal, by its JSON path
// under decision.intent.options: a flag where one sets it, else that
// path.
func optionName(path string) string {
	switch path {
	case "moveLeader":
		return "--move-leader"
	case "switchoverFirst":
		return "--switchover-first"
	case "supersede":
		return "--supersede"
	case "force":
		return "--force"
	case "generation":
		return "--generation"
	case "seedStore":
		return "the seed store"
	case "agentImage":
		return "--agent-image"
	case "storeSecret":
		return "--store-secret"
	case "maxAge":
		return "the observation age bound"
	case "staleEntryAfter":
		return "the stale entry bound"
	case "verdict.lagThreshold":
		return "the lag threshold (apply decides with its own --lag-threshold)"
	case "verdict.walLagThreshold":
		return "the WAL lag threshold (apply decides with its own --wal-lag-threshold)"
	}
	return "decision.intent.options." + path
}

// intentDiff compares what was asked for: the action, the member and
// every option but those PlanOptionsNotCompared names.
func intentDiff(add func(string, ...any), a, b model.Intent) {
	if a.Action != b.Action {
		add("the action is now %s, the plan's was %s", b.Action, a.Action)
	}
	if a.Member != b.Member {
		add("the member is now %s, the plan's was %s", orNone(b.Member), orNone(a.Member))
	}
	optionsDiff(add, a.Options, b.Options)
	sourceDiff(add, a.Options.Source, b.Options.Source)
}

// optionsDiff compares two intents' options field by field, by their
// JSON, nested structs by each of their fields; Source is compared by
// sourceDiff.
func optionsDiff(add func(string, ...any), x, y model.ActionOptions) {
	a, b := optionFields(x), optionFields(y)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] == b[k] {
			continue
		}
		add("option %s is now %s, the plan's was %s", optionName(k), orUnset(b[k]), orUnset(a[k]))
	}
}

// optionFields flattens o's JSON to path: value, without the fields
// PlanOptionsNotCompared names and without Source.
func optionFields(o model.ActionOptions) map[string]string {
	v := reflect.ValueOf(&o).Elem()
	for _, name := range PlanOptionsNotCompared {
		if f := v.FieldByName(name); f.IsValid() {
			f.SetZero()
		}
	}
	o.Source = nil
	out := map[string]string{}
	b, err := json.Marshal(o)
	if err != nil {
		out["(options)"] = err.Error()
		return out
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		out["(options)"] = err.Error()
		return out
	}
	flattenJSON("", m, out)
	return out
}

func flattenJSON(prefix string, m map[string]any, out map[string]string) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			flattenJSON(prefix+k+".", v, out)
		case string:
			out[prefix+k] = strconv.Quote(v)
		default:
			b, _ := json.Marshal(v)
			out[prefix+k] = string(b)
		}
	}
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// sourceDiff compares the generation a restore restores.
func sourceDiff(add func(string, ...any), s, t *model.GenerationFacts) {
	switch {
	case s == nil && t == nil:
	case s == nil || t == nil:
		add("the generation to restore is now %s, the plan's was %s", genFacts(t), genFacts(s))
	case s.Digest != t.Digest:
		add("generation %s's manifest digest is now %s, the plan's was %s (deleted and published again?)", t.Generation, orNone(t.Digest), orNone(s.Digest))
	case s.Generation != t.Generation || s.Engine != t.Engine || s.ClusterID != t.ClusterID || s.Revision != t.Revision || !s.CapturedAt.Equal(t.CapturedAt):
		add("the generation to restore is now %s, the plan's was %s", genFacts(t), genFacts(s))
	default:
		// any other fact, compared by its JSON
		a, _ := json.Marshal(s)
		b, _ := json.Marshal(t)
		if !bytes.Equal(a, b) {
			add("the generation to restore is now %s, the plan's was %s", b, a)
		}
	}
}

// lagBound is the lag a voter may trail the leader by and count as
// healthy, for comparing a plan's quorum with the quorum now: the
// smaller of the plan's lag threshold and the one the decision was made
// with now (each its default when unset), so that an edited threshold
// never loosens it.
func lagBound(plan, now uint64) uint64 {
	if plan == 0 {
		plan = model.DefaultLagThreshold
	}
	if now == 0 {
		now = model.DefaultLagThreshold
	}
	return min(plan, now)
}

// lagsDiff compares the quorum by the lags observed: a voter that was
// within the lag bound when the plan was made and trails the leader by
// more now is named, whatever the quorum's verdicts say.
func lagsDiff(add func(string, ...any), plan, now model.Decision) {
	bound := lagBound(plan.Intent.Options.Verdict.LagThreshold, now.Intent.Options.Verdict.LagThreshold)
	for name, was := range plan.Quorum.Lags {
		is, ok := now.Quorum.Lags[name]
		if ok && was >= 0 && uint64(was) <= bound && is > 0 && uint64(is) > bound {
			add("voter %s now trails the leader by %d entries, more than the lag threshold %d; when the plan was made it trailed by %d", name, is, bound, was)
		}
	}
}

func genFacts(g *model.GenerationFacts) string {
	if g == nil {
		return "not read"
	}
	return fmt.Sprintf("%s (%s cluster %s, revision %d, digest %s)", g.Generation, g.Engine, g.ClusterID, g.Revision, orNone(g.Digest))
}

func memberFenceDiff(add func(string, ...any), a, b *model.MemberFence) {
	switch {
	case a == nil && b == nil:
	case a == nil:
		add("member %s (%s) would now be removed too", b.ID, orNone(b.Name))
	case b == nil:
		add("member %s (%s) would no longer be removed (it is no longer listed?)", a.ID, orNone(a.Name))
	case a.ID != b.ID || a.Name != b.Name || a.ClusterID != b.ClusterID || a.IsLearner != b.IsLearner || !sameSet(a.PeerURLs, b.PeerURLs):
		add("the member to remove is now %s (%s, peer %s, cluster %s, learner %v); the plan's was %s (%s, peer %s, cluster %s, learner %v)",
			b.ID, orNone(b.Name), strings.Join(b.PeerURLs, ","), orNone(b.ClusterID), b.IsLearner,
			a.ID, orNone(a.Name), strings.Join(a.PeerURLs, ","), orNone(a.ClusterID), a.IsLearner)
	}
}

// planFences are every fence a decision carries: its deletes and its
// steps' fences (a restore's scale steps fence the StatefulSet), by kind,
// namespace and name.
func planFences(d model.Decision) map[string]model.Fence {
	out := map[string]model.Fence{}
	for _, f := range d.Fences {
		out[fenceKey(f)] = f
	}
	for _, s := range d.Steps {
		if s.Fence != nil {
			out[fenceKey(*s.Fence)] = *s.Fence
		}
	}
	return out
}

func fenceKey(f model.Fence) string { return f.Kind + " " + f.Namespace + "/" + f.Name }

func fencesDiff(add func(string, ...any), plan, now model.Decision) {
	was, is := planFences(plan), planFences(now)
	for k, f := range was {
		g, ok := is[k]
		switch {
		case !ok:
			add("%s (uid %s) is no longer fenced by the plan: it is gone, or no longer to be changed", k, f.UID)
		case g.UID != f.UID:
			add("%s was replaced: uid %s, the plan's %s", k, g.UID, f.UID)
		case g.ResourceVersion != f.ResourceVersion && !statusOnly(f, g):
			add("%s changed: resourceVersion %s, the plan's %s (its labels, annotations, owners or spec changed)", k, g.ResourceVersion, f.ResourceVersion)
		}
	}
	for k, g := range is {
		if _, ok := was[k]; !ok {
			add("%s (uid %s) would now be changed too", k, g.UID)
		}
	}
}

func stepsDiff(add func(string, ...any), a, b []model.Step) {
	kinds := func(ss []model.Step) []string {
		var out []string
		for _, s := range ss {
			out = append(out, string(s.Kind))
		}
		return out
	}
	if !slices.Equal(kinds(a), kinds(b)) {
		add("the steps are now %s; the plan's were %s", strings.Join(kinds(b), " → "), strings.Join(kinds(a), " → "))
		return
	}
	for i := range a {
		s, t := a[i], b[i]
		if s.Member != t.Member || s.MemberID != t.MemberID || !sameSet(s.PeerURLs, t.PeerURLs) || s.Replicas != t.Replicas || (s.Fence == nil) != (t.Fence == nil) {
			add("step %d (%s) now names member %s (id %s, peer %s, replicas %d, fenced %v); the plan's named %s (id %s, peer %s, replicas %d, fenced %v)", i+1, s.Kind,
				orNone(t.Member), orNone(t.MemberID), strings.Join(t.PeerURLs, ","), t.Replicas, t.Fence != nil,
				orNone(s.Member), orNone(s.MemberID), strings.Join(s.PeerURLs, ","), s.Replicas, s.Fence != nil)
		}
		if s.From != t.From {
			add("step %d (%s) now hands over from %s; the plan's from %s", i+1, s.Kind, orNone(t.From), orNone(s.From))
		}
	}
}

// PlanConflictError says how the cluster no longer matches a saved plan.
// It matches ErrFenceConflict (CLI exit 6).
type PlanConflictError struct {
	Changes []string
	// Replan is the command that makes the plan again ("" for: the same
	// command with --dry-run=client -o json).
	Replan string
}

func (e *PlanConflictError) Error() string {
	replan := e.Replan
	if replan == "" {
		replan = "the same command with --dry-run=client -o json"
	}
	return "fence conflict: the cluster no longer matches the plan: " + strings.Join(e.Changes, "; ") +
		"; nothing was changed: make a new plan (" + replan + "), review it and apply that"
}

func (e *PlanConflictError) Is(target error) bool { return target == ErrFenceConflict }

// checkPlan holds the decision made under the lock against the saved
// plan the executor applies (Executor.Plan), before anything changes.
func (r *run) checkPlan(now model.Decision) error {
	if r.x.Plan == nil {
		return nil
	}
	if c := PlanDiff(*r.x.Plan, now); len(c) > 0 {
		return &PlanConflictError{Changes: c}
	}
	return nil
}
