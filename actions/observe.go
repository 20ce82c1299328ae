package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/verdict"
)

// Observer builds the observation an action decides on: what status
// observes (API objects and every member probed on its own), plus what
// only actions need: the lock, the ledger, the template's
// --initial-cluster, template revisions and volume deletion marks, all
// read from the same list calls.
type Observer struct {
	Client kubernetes.Interface
	// Dial reaches a member's port (port-forward in production).
	Dial         engine.DialFunc
	ProbeTimeout time.Duration
	Verdict      verdict.Options
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (o *Observer) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// recordingSource keeps the objects it read.
type recordingSource struct {
	inner status.Source
	mu    sync.Mutex
	objs  *status.Objects
}

func (s *recordingSource) Read(ctx context.Context, ns string) (*status.Objects, error) {
	o, err := s.inner.Read(ctx, ns)
	s.mu.Lock()
	s.objs = o
	s.mu.Unlock()
	return o, err
}

// Observe reads cluster namespace/name. Warnings are non-fatal problems
// to show (events not readable, a ledger key that did not decode).
func (o *Observer) Observe(ctx context.Context, namespace, name string) (status.Result, status.Warnings, error) {
	src := &recordingSource{inner: status.APISource{Client: o.Client}}
	so := &status.Observer{
		Source:       src,
		Engines:      map[model.Engine]engine.Engine{model.EngineEtcd: etcdengine.New()},
		Dial:         o.Dial,
		Secrets:      status.SecretsFrom(o.Client),
		ProbeTimeout: o.ProbeTimeout,
		Verdict:      o.Verdict,
		Now:          o.Now,
	}
	results, warn, err := so.Observe(ctx, namespace, name)
	if err != nil {
		return status.Result{}, warn, err
	}
	if len(results) != 1 {
		return status.Result{}, warn, fmt.Errorf("observing %s/%s: found %d clusters", namespace, name, len(results))
	}
	obs := results[0].Observation
	var sts *appsv1.StatefulSet
	for i := range src.objs.StatefulSets {
		if s := &src.objs.StatefulSets[i]; s.Namespace == namespace && s.Name == name {
			sts = s
		}
	}
	if sts == nil {
		return status.Result{}, warn, fmt.Errorf("observing %s/%s: the StatefulSet vanished", namespace, name)
	}
	Augment(&obs, sts, src.objs)

	lock, err := ReadLock(ctx, o.Client, namespace, name)
	if err != nil {
		return status.Result{}, warn, lockReadError(err, namespace, name)
	}
	obs.Lock = lock
	led, err := ReadLedger(ctx, o.Client, namespace, name)
	if err != nil {
		return status.Result{}, warn, ledgerReadError(err, namespace, name)
	}
	obs.Ledger = led.Entries
	if obs.Cluster.KnownClusterID == "" {
		obs.Cluster.KnownClusterID = led.ClusterID
	}
	for _, k := range led.Unreadable {
		warn = append(warn, fmt.Sprintf("ledger configmap %s/%s: key %s does not decode; it is kept but ignored", namespace, LockName(name), k))
	}
	// obs.At stays when the observation began (status sets it): the lock
	// and ledger read since are newer, never older, than that.
	return status.Evaluate(obs, o.now(), o.Verdict), warn, nil
}

func lockReadError(err error, ns, name string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w: hactl actions need get, create and update on leases.coordination.k8s.io %q in namespace %q (see docs/rbac.md): %v", status.ErrForbidden, LockName(name), ns, err)
	}
	return err
}

func ledgerReadError(err error, ns, name string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w: hactl actions need get, create and update on configmaps %q in namespace %q (see docs/rbac.md): %v", status.ErrForbidden, LockName(name), ns, err)
	}
	return err
}

// Decide observes the cluster and classifies intent on it.
func (o *Observer) Decide(ctx context.Context, namespace, name string, in classify.Intent) (classify.Decision, status.Result, status.Warnings, error) {
	res, warn, err := o.Observe(ctx, namespace, name)
	if err != nil {
		return classify.Decision{}, res, warn, err
	}
	in.Options.Verdict = o.Verdict
	return classify.Classify(res.Observation, in, o.now()), res, warn, nil
}

// Augment adds to obs what status does not decode and actions need, from
// the objects the observation was built from: the template's
// --initial-cluster, the StatefulSet's update revision, each pod's
// revision and each volume's deletion mark.
func Augment(obs *model.Observation, sts *appsv1.StatefulSet, objs *status.Objects) {
	obs.Cluster.UpdateRevision = sts.Status.UpdateRevision
	t := &obs.Cluster.Template
	obs.Cluster.Fingerprint = StatefulSetFingerprint(sts)
	obs.Cluster.PodManagementPolicy = string(sts.Spec.PodManagementPolicy)
	if obs.Cluster.PodManagementPolicy == "" {
		obs.Cluster.PodManagementPolicy = string(appsv1.OrderedReadyPodManagement)
	}
	if c := containerNamed(sts, t.Container); c != nil {
		t.InitialCluster, t.InitialClusterDecoded = initialCluster(c, sts.Namespace)
		t.InitialClusterToken = flagOrEnv(c, reClusterToken, "ETCD_INITIAL_CLUSTER_TOKEN", sts.Namespace)
		if d := flagOrEnv(c, reDataDir, "ETCD_DATA_DIR", sts.Namespace); d != "" && !reVarRef.MatchString(d) && path.IsAbs(d) {
			t.DataDir = path.Clean(d)
			t.DataVolume, t.DataMount = dataVolume(sts, c, t.DataDir)
		}
	}
	obs.Cluster.RestorePods = restorePods(sts, objs.Pods)
	pods := map[string]*corev1.Pod{}
	for i := range objs.Pods {
		if p := &objs.Pods[i]; p.Namespace == sts.Namespace {
			pods[p.Name] = p
		}
	}
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	for i := range objs.PVCs {
		if p := &objs.PVCs[i]; p.Namespace == sts.Namespace {
			pvcs[p.Name] = p
		}
	}
	for i := range obs.Members {
		m := &obs.Members[i]
		if m.Pod != nil {
			if p, ok := pods[m.Pod.Name]; ok && string(p.UID) == m.Pod.UID {
				cp := *m.Pod
				cp.Revision = p.Labels[appsv1.ControllerRevisionHashLabelKey]
				cp.Fingerprint = Fingerprint(&p.ObjectMeta, p.Spec)
				m.Pod = &cp
			}
		}
		if m.PVC != nil {
			if p, ok := pvcs[m.PVC.Name]; ok && string(p.UID) == m.PVC.UID {
				cp := *m.PVC
				cp.DeletionMarked = p.DeletionTimestamp != nil
				cp.Fingerprint = Fingerprint(&p.ObjectMeta, p.Spec)
				m.PVC = &cp
			}
		}
	}
}

// Fingerprint digests what a person or controller changes about an
// object (labels, annotations, owner references, finalizers, deletion
// mark, spec) and leaves out what the kubelet reports (status) and the
// bookkeeping that moves with every write (resourceVersion, managed
// fields).
func Fingerprint(meta *metav1.ObjectMeta, spec any) string {
	v := struct {
		Labels      map[string]string       `json:"l,omitempty"`
		Annotations map[string]string       `json:"a,omitempty"`
		Owners      []metav1.OwnerReference `json:"o,omitempty"`
		Finalizers  []string                `json:"f,omitempty"`
		Deleting    bool                    `json:"d,omitempty"`
		Spec        any                     `json:"s"`
	}{meta.Labels, meta.Annotations, meta.OwnerReferences, meta.Finalizers, meta.DeletionTimestamp != nil, spec}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// StatefulSetFingerprint is the fingerprint of a StatefulSet's metadata and
// spec without spec.replicas: a restore scales the StatefulSet itself, and
// its own scaling must not read as an edit; whether someone else scaled
// it is judged from the replicas (see docs/actions.md, Fences).
func StatefulSetFingerprint(sts *appsv1.StatefulSet) string {
	spec := sts.Spec
	spec.Replicas = nil
	return Fingerprint(&sts.ObjectMeta, spec)
}

func containerNamed(sts *appsv1.StatefulSet, name string) *corev1.Container {
	cs := sts.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	for i := range cs {
		if path.Base(strings.Split(cs[i].Image, ":")[0]) == "etcd" {
			return &cs[i]
		}
	}
	return nil
}

var (
	reInitialCluster = regexp.MustCompile(`--initial-cluster(?:=|\s+)["']?([^\s"']+)`)
	reClusterToken   = regexp.MustCompile(`--initial-cluster-token(?:=|\s+)["']?([^\s"']+)`)
	reDataDir        = regexp.MustCompile(`--data-dir(?:=|\s+)["']?([^\s"']+)`)
	reVarRef         = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
)

// initialCluster finds the container's --initial-cluster (or
// ETCD_INITIAL_CLUSTER), resolving $(VAR) references to literal env values
// and to the pod's namespace. A value that does not parse, or still holds
// a reference, counts as decoded but empty: the classifier then refuses
// with the reason.
func initialCluster(c *corev1.Container, namespace string) ([]model.InitialClusterEntry, bool) {
	raw := flagOrEnv(c, reInitialCluster, "ETCD_INITIAL_CLUSTER", namespace)
	if raw == "" || reVarRef.MatchString(raw) {
		return nil, true
	}
	es, err := classify.ParseInitialCluster(raw)
	if err != nil {
		return nil, true
	}
	return es, true
}

// flagOrEnv is the value of the container's flag (matched by re in its
// command and args) or else of its environment variable env, with $(VAR)
// references resolved to literal env values and to the pod's namespace;
// "" when neither is set.
func flagOrEnv(c *corev1.Container, re *regexp.Regexp, env, namespace string) string {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = namespace
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		}
	}
	raw := ""
	argv := strings.Join(append(append([]string(nil), c.Command...), c.Args...), " ")
	if m := re.FindStringSubmatch(argv); m != nil {
		raw = m[1]
	} else if v, ok := vars[env]; ok {
		raw = v
	}
	return reVarRef.ReplaceAllStringFunc(raw, func(ref string) string {
		if v, ok := vars[reVarRef.FindStringSubmatch(ref)[1]]; ok {
			return v
		}
		return ref
	})
}

// dataVolume finds the volume claim template whose mount in c holds dir:
// the longest mount path that is dir or one of its parents.
func dataVolume(sts *appsv1.StatefulSet, c *corev1.Container, dir string) (claim, mount string) {
	claims := map[string]bool{}
	for _, t := range sts.Spec.VolumeClaimTemplates {
		claims[t.Name] = true
	}
	for _, m := range c.VolumeMounts {
		mp := path.Clean(m.MountPath)
		if !claims[m.Name] || m.SubPath != "" || (dir != mp && !strings.HasPrefix(dir, mp+"/")) {
			continue
		}
		if len(mp) > len(mount) {
			claim, mount = m.Name, mp
		}
	}
	return claim, mount
}

// RestoreLabel marks a restore's one-shot pods with the cluster they
// restore and MemberLabel with the member; the annotations
// GenerationLabel and ActionLabel name the generation and the ledger
// entry (annotations: their values need not be valid label values).
const (
	RestoreLabel    = "hactl.dev/restore-of"
	MemberLabel     = "hactl.dev/member"
	GenerationLabel = "hactl.dev/generation"
	ActionLabel     = "hactl.dev/action-id"
)

func restorePods(sts *appsv1.StatefulSet, pods []corev1.Pod) []model.RestorePodFacts {
	var out []model.RestorePodFacts
	for i := range pods {
		p := &pods[i]
		if p.Namespace != sts.Namespace || p.Labels[RestoreLabel] != sts.Name {
			continue
		}
		f := model.RestorePodFacts{
			Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion,
			Member: p.Labels[MemberLabel], Generation: p.Annotations[GenerationLabel], Action: p.Annotations[ActionLabel],
			Phase: string(p.Status.Phase), DeletionMarked: p.DeletionTimestamp != nil,
			Fingerprint: Fingerprint(&p.ObjectMeta, p.Spec),
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				f.Message = strings.TrimSpace(t.Message)
				if f.Message == "" {
					f.Message = fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason)
				}
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
