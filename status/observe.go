package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/source"
	"github.com/hactl-dev/hactl/verdict"
)

// SecretGetter reads a Secret; status uses it only to build engine
// credentials, which never leave the engine package's Credentials value.
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// SecretsFrom returns a SecretGetter backed by client.
func SecretsFrom(c kubernetes.Interface) SecretGetter {
	return func(ctx context.Context, ns, name string) (*corev1.Secret, error) {
		return c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
}

// Observer builds observations of HA clusters.
type Observer struct {
	Source Source
	// Engines by name; clusters of an engine not listed here are reported
	// from the API server alone.
	Engines map[model.Engine]engine.Engine
	// Dial reaches a member's port (port-forward in production). When nil,
	// no engine probe runs.
	Dial engine.DialFunc
	// ProxyGet asks a member's port through the API server's pod proxy,
	// for an engine that reads its members that way (CloudNativePG's
	// instance manager); when nil, the Source's (PodProxy) is used where
	// it has one.
	ProxyGet engine.ProxyGetFunc
	// Secrets reads TLS Secrets named by hactl.dev/client-tls-secret.
	Secrets SecretGetter
	// MemberTLS are client credentials from local files (--etcd-cacert,
	// --etcd-cert, --etcd-key): for the clusters of static pods whose
	// members ask every client for a certificate (kubeadm's etcd, whose
	// certificates exist only as files on its nodes; nothing of theirs
	// can name a Secret). Nil when none were given.
	MemberTLS *engine.Credentials
	// TLSSecret (--secret), when set, names the Secret in each cluster's
	// namespace its members are dialled with, over the annotation and
	// what a layout names (UseTLSSecret).
	TLSSecret    string
	ProbeTimeout time.Duration
	// Conns, when set, keeps member connections open from one Observe to
	// the next (a watch's rounds); clients of members no longer probed
	// are closed after each round.
	Conns *engine.Conns
	// MaxParallelProbes bounds concurrent member probes (default 64).
	MaxParallelProbes int
	Verdict           model.VerdictOptions
	// Now is the clock (time.Now when nil). Observe may call it from
	// several goroutines at once: each cluster is evaluated at the time
	// its own probes ended.
	Now func() time.Time
	// Selector, when set, keeps only the clusters whose StatefulSet's
	// labels it matches (status -l).
	Selector labels.Selector
	// Layouts are where clusters' members come from (source.Default()
	// when nil: StatefulSets).
	Layouts []source.Layout
	// memory, when set, keeps each probe's facts, and a read without a
	// probe (Dial nil) shows the members as they last answered (a
	// Watcher's rounds).
	memory *probeMemory
	// HolderGone reports whether a lock holder is known to have ended
	// (a process on this host that no longer runs); nil: never known.
	HolderGone func(holder string) bool
}

// Result is one cluster's observation and verdict.
type Result struct {
	Observation model.Observation
	Verdict     model.Verdict
	// Analysis holds the cluster-wide facts the verdict was built on
	// (reference cluster ID, leader, quorum arithmetic).
	Analysis model.Analysis
	// View is how the cluster's engine shows it (its roles, lag unit and
	// table columns): nil for an engine that offers none, whose members
	// print in hactl's generic terms.
	View model.EngineView
}

// Warnings are non-fatal problems met while observing (events not
// readable, …), to print on stderr.
type Warnings []string

// Observe reads every HA cluster in namespace ("" for all), or only the
// one called name, probes their members and evaluates the verdict.
func (o *Observer) Observe(ctx context.Context, namespace, name string) ([]Result, Warnings, error) {
	now := o.now()
	objs, err := o.Source.Read(ctx, namespace)
	if err != nil {
		return nil, nil, err
	}
	var warn Warnings
	if objs.EventsErr != nil {
		warn = append(warn, fmt.Sprintf("events not shown: %v", objs.EventsErr))
	}
	if objs.ConfigMapsErr != nil {
		warn = append(warn, fmt.Sprintf("ConfigMaps not read (Patroni leader locks, engine settings): %v", objs.ConfigMapsErr))
	}
	if objs.EndpointsErr != nil && objs.ConfigMapsErr == nil {
		warn = append(warn, fmt.Sprintf("Endpoints not read (the leader locks of Patroni clusters whose DCS is on Endpoints): %v", objs.EndpointsErr))
	}
	if objs.ActionsErr != nil {
		warn = append(warn, fmt.Sprintf("hactl's action locks and ledgers not read (actions not shown): %v", objs.ActionsErr))
	}
	parts := partsOf(o.Engines)
	picked, err := o.workloads(objs, parts, namespace, name)
	if err != nil {
		return nil, warn, err
	}
	ix := newIndex(objs)
	obs := make([]model.Observation, len(picked))
	for i, w := range picked {
		obs[i] = decodeCluster(w, ix, now, parts)
		if err := objs.ActionsUnread[w.Owner.Namespace+"/"+w.Owner.Name]; err != nil {
			warn = append(warn, fmt.Sprintf("%s/%s: actions not shown: %v", w.Owner.Namespace, w.Owner.Name, err))
			continue
		}
		warn = append(warn, decodeActions(&obs[i], ix, o.HolderGone)...)
		// At is when the observation began: every fact in it is at least
		// this old, so its age is never understated.
		obs[i].At = now
	}
	if o.memory != nil && o.Dial == nil {
		o.memory.graft(obs, name == "")
	}
	out := make([]Result, len(obs))
	vo := o.VerdictOptions()
	views := engine.Views(o.Engines)
	// A probed cluster is evaluated as soon as its own members have
	// answered, while other clusters' probes are still out: the verdicts
	// cost no time after the last answer but the last cluster's. One
	// that is not probed is evaluated as the probes are being sent.
	warn = append(warn, o.probe(ctx, obs, func(i int) {
		out[i] = Evaluate(obs[i], o.now(), vo)
		out[i].View = views[obs[i].Cluster.Engine]
	})...)
	if o.memory != nil && o.Dial != nil {
		o.memory.remember(obs, name == "")
	}
	return out, warn, nil
}

// workloads are the clusters o's layouts find in objs, kept by o's
// Selector, sorted; only the one called name when name is set (a
// *NotFoundError naming the others when there is none).
func (o *Observer) workloads(objs *Objects, parts engineParts, namespace, name string) ([]source.Workload, error) {
	layouts := o.Layouts
	if layouts == nil {
		layouts = source.Default()
	}
	detectIn := func(l map[string]string, t model.PodTemplate) (model.Engine, bool) {
		return detect(l, t, parts.decoders)
	}
	var all []source.Workload
	so := source.Objects{StatefulSets: objs.StatefulSets, Pods: objs.Pods, PVCs: objs.PVCs, Cozystack: objs.Cozystack, Druid: objs.Druid, Zalando: objs.Zalando, CNPG: objs.CNPG}
	for _, l := range layouts {
		all = append(all, l.Workloads(so, detectIn)...)
	}
	source.Sort(all)
	if o.Selector != nil && !o.Selector.Empty() {
		all = slices.DeleteFunc(all, func(w source.Workload) bool { return !o.Selector.Matches(labels.Set(w.Owner.Labels)) })
	}
	if name == "" {
		return all, nil
	}
	var picked []source.Workload
	var names []string
	for _, w := range all {
		names = append(names, w.Owner.Name)
		if w.Owner.Name == name {
			picked = append(picked, w)
		}
	}
	if len(picked) == 0 {
		return nil, &NotFoundError{Name: name, Namespace: namespace, Existing: names}
	}
	return picked, nil
}

// VerdictOptions are o.Verdict with the verdict rules of o's engines that
// keep their own (an explicit o.Verdict.Rules is kept).
func (o *Observer) VerdictOptions() model.VerdictOptions {
	v := o.Verdict
	if v.Rules == nil {
		v.Rules = engine.VerdictRules(o.Engines)
	}
	return v
}

func (o *Observer) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// probe asks every member of every cluster, all in parallel (bounded), each
// within the probe timeout, and calls done(i) once cluster obs[i] has all
// its answers (at once for a cluster that is not probed), each i once and
// before probe returns; calls for different clusters may run at once.
func (o *Observer) probe(ctx context.Context, obs []model.Observation, done func(int)) Warnings {
	if o.Dial == nil {
		for i := range obs {
			done(i)
		}
		return nil
	}
	limit := o.MaxParallelProbes
	if limit <= 0 {
		limit = 64
	}
	sem := make(chan struct{}, limit)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		warn   Warnings
		probed = map[string]bool{} // Conns keys of this round
	)
	for ci := range obs {
		ob := &obs[ci]
		eng, ok := o.Engines[ob.Cluster.Engine]
		if !ok {
			done(ci)
			continue
		}
		if o.TLSSecret != "" {
			UseTLSSecret(&ob.Cluster, o.TLSSecret)
		}
		creds, err := o.credentials(ctx, ob.Cluster)
		var auth *engine.BasicAuth
		if err == nil {
			auth, err = ReadMemberAuth(ctx, o.Secrets, ob.Cluster, "probe the members")
		}
		var unasked error
		if err != nil {
			mu.Lock()
			warn = append(warn, fmt.Sprintf("%s/%s: %v", ob.Cluster.Namespace, ob.Cluster.Name, err))
			mu.Unlock()
			o.credentialsFailed(ob, err)
			if ob.Cluster.Template.MetricsPort == 0 {
				done(ci)
				continue
			}
			// Not asked; what needs no credentials is read beside (a
			// plaintext metrics listener).
			unasked, creds, auth = err, nil, nil
		}
		ob.EngineProbed = true
		targets := probeTargets(ob)
		if len(targets) == 0 {
			done(ci)
			continue
		}
		// The last of the cluster's probes to finish calls done.
		left := new(atomic.Int32)
		left.Store(int32(len(targets)))
		for _, mi := range targets {
			m := &ob.Members[mi]
			t := memberTarget(ob, m)
			wg.Add(1)
			go func() {
				defer wg.Done()
				func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					po := engine.ProbeOptions{Timeout: o.ProbeTimeout, Dial: o.Dial, Credentials: creds, Conns: o.Conns, Auth: auth, Unasked: unasked, ProxyGet: o.proxyGet()}
					mu.Lock()
					probed[engine.ConnKey(string(ob.Cluster.Engine), t, creds, auth)] = true
					mu.Unlock()
					facts := eng.Probe(ctx, []engine.Target{t}, po)
					if len(facts) == 1 {
						f := facts[0]
						m.Engine = &f
					}
				}()
				// Outside the semaphore: an evaluation holds up no probe.
				if left.Add(-1) == 0 {
					done(ci)
				}
			}()
		}
	}
	wg.Wait()
	if o.Conns != nil {
		// Members gone since the last round: close their clients.
		o.Conns.Retain(func(k string) bool { return probed[k] })
	}
	return warn
}

// memberTarget is how member m of ob's cluster is reached: its pod, the
// client port, and the name its serving certificate carries.
func memberTarget(ob *model.Observation, m *model.Member) engine.Target {
	t := engine.Target{Member: m.Name, Namespace: ob.Cluster.Namespace, Cluster: ob.Cluster.Name, Pod: m.Pod.Name, Port: ob.Cluster.Template.ClientPort, UID: m.Pod.UID,
		Config: ob.Cluster.EngineConfig, CertPorts: ob.Cluster.Template.CertPorts, MetricsPort: ob.Cluster.Template.MetricsPort, TLS: ob.Cluster.Template.ClientTLS}
	switch {
	case ob.Cluster.ServerName != "":
		t.ServerName = ob.Cluster.ServerName
	case ob.Cluster.ServiceName != "":
		t.ServerName = m.Pod.Name + "." + ob.Cluster.ServiceName + "." + ob.Cluster.Namespace + ".svc"
	}
	return t
}

// credentialsFailed reports every running member of ob as not asked for
// want of credentials (err says why).
func (o *Observer) credentialsFailed(ob *model.Observation, err error) {
	ob.EngineProbed = true
	for mi := range ob.Members {
		if m := &ob.Members[mi]; m.Pod != nil && m.Pod.Running {
			m.Engine = &model.EngineFacts{Err: err.Error(), Failure: model.ProbeFailureCredentials, ProbedAt: o.now()}
		}
	}
}

// probeTargets are the members of ob that can be asked: a pod that runs
// on a node.
func probeTargets(ob *model.Observation) []int {
	var targets []int
	for mi := range ob.Members {
		m := ob.Members[mi]
		if m.Pod != nil && m.Pod.Node != "" && m.Pod.Phase == string(corev1.PodRunning) {
			targets = append(targets, mi)
		}
	}
	return targets
}

// credentials reads the cluster's TLS Secrets, if it names any; for a
// managed cluster whose members ask for a client certificate and whose
// objects name none (static pods) they are o.MemberTLS.
func (o *Observer) credentials(ctx context.Context, c model.ClusterFacts) (*engine.Credentials, error) {
	if (c.TLSSecret != "" || c.TLSCASecret != "") && o.Secrets == nil {
		return nil, fmt.Errorf("TLS Secret %q cannot be read (no client)", cmp.Or(c.TLSSecret, c.TLSCASecret))
	}
	if c.TLSSecret == "" && c.Template.ClientCertAuth && c.ManagedBy != nil {
		// No object of theirs names a Secret (static pods), or the one
		// that would could not be read: certificates as files.
		if o.MemberTLS == nil {
			if op := c.Operator; op != nil && op.Err != "" {
				return nil, fmt.Errorf("the members ask every client for a certificate (--client-cert-auth), and the %s naming the operator's client Secret could not be read (%s): grant get and list on it, or pass --etcd-cacert, --etcd-cert and --etcd-key", op.Kind, op.Err)
			}
			return nil, ErrNoMemberTLS
		}
		return o.MemberTLS, nil
	}
	return ReadCredentials(ctx, o.Secrets, c, "probe the members")
}

// UseTLSSecret makes c's members dialled with Secret secret (--secret),
// whatever the annotation or c's layout names.
func UseTLSSecret(c *model.ClusterFacts, secret string) {
	c.TLSSecret, c.TLSSecretFrom = secret, "--secret"
	c.TLSCASecret, c.TLSCAKey, c.TLSCertKey, c.TLSKeyKey = "", "", "", ""
}

// ErrNoMemberTLS: static pods' members ask every client for a
// certificate, and no files were given.
var ErrNoMemberTLS = errors.New("the members ask every client for a certificate (--client-cert-auth) and none was given: " +
	"pass --etcd-cacert, --etcd-cert and --etcd-key (kubeadm: /etc/kubernetes/pki/etcd/ca.crt, healthcheck-client.crt and healthcheck-client.key, copied from a control-plane node)")

// ReadCredentials reads the client TLS material a cluster names: with the
// annotation hactl.dev/client-tls-secret, or with its operator's own
// fields (TLSSecretFrom: the client identity in TLSSecret, the CA that
// verifies the members in TLSCASecret's ca.crt, or its TLSCAKey); nil
// when it names none.
// purpose ("probe the members", "act on the members") completes the RBAC
// hint. Errors name the Secret, never its contents.
func ReadCredentials(ctx context.Context, get SecretGetter, c model.ClusterFacts, purpose string) (*engine.Credentials, error) {
	namedBy := cmp.Or(c.TLSSecretFrom, "annotation "+AnnotationTLSSecret)
	var cr *engine.Credentials
	if c.TLSSecret != "" {
		s, err := namedSecret(ctx, get, c.Namespace, c.TLSSecret, namedBy, "TLS", purpose)
		if err != nil {
			return nil, err
		}
		data := s.Data
		if c.TLSCertKey != "" || c.TLSKeyKey != "" {
			// The layout names the keys (Bitnami's certFilename,
			// certKeyFilename): those, not the usual names.
			data = map[string][]byte{"tls.crt": s.Data[c.TLSCertKey], "tls.key": s.Data[c.TLSKeyKey]}
			if len(data["tls.crt"]) == 0 || len(data["tls.key"]) == 0 {
				return nil, fmt.Errorf("TLS Secret %q (%s) has no %s and %s to identify hactl with", c.TLSSecret, namedBy, c.TLSCertKey, c.TLSKeyKey)
			}
		}
		if cr, err = engine.CredentialsFromKeys(data); err != nil {
			return nil, fmt.Errorf("TLS Secret %q has %w", c.TLSSecret, err)
		}
	}
	if c.TLSCASecret != "" {
		s, err := namedSecret(ctx, get, c.Namespace, c.TLSCASecret, namedBy, "TLS", purpose)
		if err != nil {
			return nil, err
		}
		key := cmp.Or(c.TLSCAKey, "ca.crt")
		ca := s.Data[key]
		if len(ca) == 0 {
			return nil, fmt.Errorf("TLS Secret %q (%s) has no %s to verify the members with", c.TLSCASecret, namedBy, key)
		}
		if cr == nil {
			cr = &engine.Credentials{}
		}
		cr.CAPEM = ca
	}
	return cr, nil
}

// ReadMemberAuth reads the password the members ask every client for
// (etcd with auth enabled), from the Secret key the cluster's template
// names (Bitnami's chart: ETCD_ROOT_PASSWORD from Secret <fullname>,
// key etcd-root-password); nil when it names none. purpose completes the
// RBAC hint. Errors name the Secret and key, never the password.
func ReadMemberAuth(ctx context.Context, get SecretGetter, c model.ClusterFacts, purpose string) (*engine.BasicAuth, error) {
	t := c.Template
	if t.Password == nil {
		return nil, nil
	}
	if get == nil {
		return nil, fmt.Errorf("the members' password (Secret %q) cannot be read (no client)", t.Password.Secret)
	}
	namedBy := cmp.Or(t.PasswordFrom, "the pod template")
	s, err := namedSecret(ctx, get, c.Namespace, t.Password.Secret, namedBy, "password", purpose)
	if err != nil {
		return nil, err
	}
	pw, ok := s.Data[t.Password.Key]
	if !ok || len(pw) == 0 {
		return nil, fmt.Errorf("password Secret %q (%s) has no key %q", t.Password.Secret, namedBy, t.Password.Key)
	}
	return &engine.BasicAuth{Username: cmp.Or(t.User, "root"), Password: string(pw)}, nil
}

// ReadRESTAuth reads the REST API credentials a cluster names with the
// annotation hactl.dev/rest-auth-secret (keys username and password, as a
// kubernetes.io/basic-auth Secret); nil when it names none. Only actions
// need them: probes read, and Patroni asks no credentials for reading.
// purpose completes the RBAC hint. Errors name the Secret, never its
// contents.
func ReadRESTAuth(ctx context.Context, get SecretGetter, c model.ClusterFacts, purpose string) (*engine.BasicAuth, error) {
	if c.RESTAuthSecret == "" {
		return nil, nil
	}
	if get == nil {
		return nil, fmt.Errorf("REST API Secret %q cannot be read (no client)", c.RESTAuthSecret)
	}
	s, err := namedSecret(ctx, get, c.Namespace, c.RESTAuthSecret, "annotation "+AnnotationRESTAuthSecret, "REST API", purpose)
	if err != nil {
		return nil, err
	}
	a := &engine.BasicAuth{Username: string(s.Data["username"]), Password: string(s.Data["password"])}
	if a.Username == "" || a.Password == "" {
		return nil, fmt.Errorf("REST API Secret %q (annotation %s) needs both keys username and password", c.RESTAuthSecret, AnnotationRESTAuthSecret)
	}
	return a, nil
}

// namedSecret gets Secret name in ns, which namedBy names ("annotation
// hactl.dev/client-tls-secret", an operator's field); kind ("TLS", "REST
// API") and purpose word the errors, which name the Secret, never its
// contents.
func namedSecret(ctx context.Context, get SecretGetter, ns, name, namedBy, kind, purpose string) (*corev1.Secret, error) {
	s, err := get(ctx, ns, name)
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("you may not get secret %q in namespace %q (%s); grant get on that Secret to %s", name, ns, namedBy, purpose)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s Secret %q named by %s does not exist in namespace %q", kind, name, namedBy, ns)
	case err != nil:
		return nil, fmt.Errorf("reading %s Secret %q: %w", kind, name, err)
	}
	return s, nil
}

// Evaluate runs the pure verdict over one observation.
func Evaluate(obs model.Observation, now time.Time, opts model.VerdictOptions) Result {
	ob, v, a := verdict.EvaluateAll(obs, now, opts)
	return Result{Observation: ob, Verdict: v, Analysis: a}
}

// proxier is a Source that reaches pods through the API server's pod
// proxy (APISource, a Watcher's).
type proxier interface {
	PodProxy() engine.ProxyGetFunc
}

// proxyGet is o.ProxyGet, else its Source's pod proxy, else nil.
func (o *Observer) proxyGet() engine.ProxyGetFunc {
	if o.ProxyGet != nil {
		return o.ProxyGet
	}
	if p, ok := o.Source.(proxier); ok {
		return p.PodProxy()
	}
	return nil
}
