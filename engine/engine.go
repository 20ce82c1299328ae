package engine

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// DefaultTimeout bounds each member's probe when ProbeOptions.Timeout is
// zero.
const DefaultTimeout = 2 * time.Second

// DialFunc opens a connection to port on the pod namespace/pod. It must
// honour ctx: return once ctx is done, and tie nothing it starts to ctx's
// lifetime beyond the dial itself (the returned connection lives until it
// is closed).
type DialFunc func(ctx context.Context, namespace, pod string, port int) (net.Conn, error)

// ProxyGetFunc asks port of the pod namespace/pod for path with a GET
// over scheme (http or https) through the API server's pod proxy (GET
// /api/v1/namespaces/NS/pods/[https:]POD:PORT/proxy/PATH, RBAC get
// pods/proxy),
// as kubectl plugins read an operator's per-pod status. It returns the
// status code and body of the member's answer; an error means the member
// gave none (the API server refused the request, or could not reach the
// pod: Proxied says which). It must honour ctx.
type ProxyGetFunc func(ctx context.Context, namespace, pod, scheme string, port int, path string) (code int, body []byte, err error)

// ProxyError is a ProxyGetFunc's error: the API server answered code
// itself (403: the caller may not get pods/proxy; 502/503: it could not
// reach the pod) with message.
type ProxyError struct {
	Code    int
	Message string
}

func (e *ProxyError) Error() string { return e.Message }

// Target is one member to dial.
type Target struct {
	// Member names the member in messages (usually the pod name).
	Member string
	// Namespace and Pod are passed to the DialFunc.
	Namespace, Pod string
	// Cluster names the member's cluster (within Namespace), when known:
	// what the members of one cluster share (etcd's auth tokens) is kept
	// by it.
	Cluster string
	// Port is the engine's client port inside the pod (2379 for etcd).
	Port int
	// UID is the pod's UID, when known: a connection kept open (Conns)
	// is only ever reused for the same pod.
	UID string
	// ServerName is the name the member's serving certificate is checked
	// against when TLS is used and Credentials.ServerName is empty, for
	// example "etcd-0.etcd-headless.ns.svc". When both are empty, Pod is
	// used.
	ServerName string
	// Config is the engine's own settings for the member's cluster
	// (model.ClusterFacts.EngineConfig), nil when it has none.
	Config map[string]string
	// CertPorts are the member's other TLS ports (etcd's peer port,
	// model.TemplateFacts.CertPorts) whose serving certificate the probe
	// reads with a handshake alone: nothing is sent on them.
	CertPorts []int
	// TLS: the member's client port serves TLS of its own
	// (model.TemplateFacts.ClientTLS), whatever Credentials are given.
	TLS bool
	// MetricsPort is the member's plaintext metrics port
	// (model.TemplateFacts.MetricsPort), 0 when none.
	MetricsPort int
}

// ProbeOptions tune one Probe call.
type ProbeOptions struct {
	// Timeout bounds each member's probe, dial included (DefaultTimeout
	// when zero). Members are probed in parallel, so the whole Probe
	// takes about one Timeout, not one per member.
	Timeout time.Duration
	// Dial opens the connection to each member. Required.
	Dial DialFunc
	// Credentials, when set, make the engine speak TLS with this client
	// material. Nil means plaintext.
	Credentials *Credentials
	// Conns, when set, keeps member clients open across Probe calls
	// (engines that can reuse them do).
	Conns *Conns
	// Auth, when set, is the user and password the engine sends: what
	// Patroni's restapi.authentication asks of its unsafe methods (its
	// actions alone send it; its probes only read), and what etcd with
	// auth enabled asks of every client, probes too.
	Auth *BasicAuth
	// ProxyGet, when set, reaches an engine that reads its members
	// through the API server's pod proxy (CloudNativePG's instance
	// manager); such an engine dials through Dial when it is nil.
	ProxyGet ProxyGetFunc
	// Unasked, when set, says why the members' client port is not to be
	// asked (the credentials it needs are missing): each target is a
	// credentials failure with it, and an engine may read what needs no
	// credentials beside (etcd: its plaintext metrics listener).
	Unasked error
}

// UnaskedFacts are targets' facts when o.Unasked says they are not to
// be asked: a credentials failure each, with its reason.
func UnaskedFacts(targets []Target, o ProbeOptions) []model.EngineFacts {
	out := make([]model.EngineFacts, len(targets))
	for i := range out {
		out[i] = model.EngineFacts{ProbedAt: time.Now(), Failure: model.ProbeFailureCredentials, Err: o.Unasked.Error()}
	}
	return out
}

// WithDefaults returns o with zero values replaced by their defaults.
func (o ProbeOptions) WithDefaults() ProbeOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Engine asks the members of one kind of database about themselves.
type Engine interface {
	// Name is the engine this implementation speaks to.
	Name() model.Engine
	// Probe dials every target on its own, in parallel, each bounded by
	// o.Timeout, and returns one EngineFacts per target in target order.
	// It never hangs much beyond o.Timeout (or ctx's deadline, if
	// sooner) and never fails as a whole: a member that cannot be asked
	// is reported as EngineFacts{Reachable: false, Err: why}.
	Probe(ctx context.Context, targets []Target, o ProbeOptions) []model.EngineFacts
	// Members returns the engine's member operations, each dialled with
	// o (one connection per call, never following advertised URLs).
	Members(o ProbeOptions) MemberOps
}

// Judged is implemented by an engine that keeps its verdict rules in its
// own package: whoever holds the engines hands them to the verdict (see
// VerdictRules).
type Judged interface {
	VerdictRules() model.VerdictRules
}

// VerdictRules collects the verdict rules of the engines that keep their
// own (model.VerdictOptions.Rules); nil when none does.
func VerdictRules(engines map[model.Engine]Engine) map[model.Engine]model.VerdictRules {
	return offered(engines, Judged.VerdictRules)
}

// offered collects what the engines that implement I offer through get,
// by engine; nil when none does.
func offered[I, T any](engines map[model.Engine]Engine, get func(I) T) map[model.Engine]T {
	var out map[model.Engine]T
	for name, e := range engines {
		x, ok := e.(I)
		if !ok {
			continue
		}
		if out == nil {
			out = map[model.Engine]T{}
		}
		out[name] = get(x)
	}
	return out
}

// Viewed is implemented by an engine that says how its facts read in
// hactl's views: whoever holds the engines hands them to the views (see
// Views).
type Viewed interface {
	View() model.EngineView
}

// Views collects the views of the engines that have one; nil when none
// does.
func Views(engines map[model.Engine]Engine) map[model.Engine]model.EngineView {
	return offered(engines, Viewed.View)
}

// Decoder is offered by an engine whose clusters hactl reads from their
// workloads: it recognises the engine's container in a pod template and
// decodes what its flags and environment say. Whoever holds the engines
// hands them to status (see Decoders); a cluster whose engine offers none
// is decoded plainly (its first container, nothing engine-specific).
type Decoder interface {
	// Recognises reports whether t runs the engine, for a workload that
	// does not name its engine with the hactl.dev/engine label.
	Recognises(t model.PodTemplate) bool
	// Template decodes the engine container's facts from t: what status
	// shows and the verdict judges with (OperatorOwner and the shape are
	// status's to fill).
	Template(t model.PodTemplate) model.TemplateFacts
	// ActionTemplate adds to tf what only actions need: what a member
	// recreated from t would boot with (the initial cluster, the data
	// directory and the volume that holds it).
	ActionTemplate(t model.PodTemplate, tf *model.TemplateFacts)
}

// Decoders collects the decoders of the engines that offer one; nil when
// none does.
func Decoders(engines map[model.Engine]Engine) map[model.Engine]Decoder {
	return offered(engines, func(d Decoder) Decoder { return d })
}

// Keeper is offered by an engine that keeps state of its own in the API
// server beside its members (Patroni's DCS in ConfigMaps). Whoever holds
// the engines hands them to status (see Keepers), which lists ConfigMaps
// only when a cluster of such an engine is present.
type Keeper interface {
	// Keep decodes what cluster c, whose pod template is t, keeps in
	// objs into c, and says which pod label carries each member's role.
	Keep(t model.PodTemplate, objs model.APIObjects, c *model.ClusterFacts) model.Kept
}

// Keepers collects the keepers of the engines that offer one; nil when
// none does.
func Keepers(engines map[model.Engine]Engine) map[model.Engine]Keeper {
	return offered(engines, func(k Keeper) Keeper { return k })
}

// MemberOps changes an engine's membership through one member (the
// leader): what the executor calls to remove, add, promote and move.
// Implementations report "already so" as ErrAlready, "not yet" as
// ErrNotYet, and a request sent without an answer as ErrOutcomeUnknown.
type MemberOps interface {
	RemoveMember(ctx context.Context, via Target, id string) error
	AddLearner(ctx context.Context, via Target, peerURLs []string) (model.Peer, error)
	PromoteLearner(ctx context.Context, via Target, id string) error
	// MoveLeader hands leadership to member toID through via, the
	// leader as observed (for Patroni: a switchover from via.Member to
	// toID, sent to via, refused with ErrPrecondition when via.Member no
	// longer leads).
	MoveLeader(ctx context.Context, via Target, toID string) error
}

// Actioner is implemented by an engine whose repairs are actions of its
// own rather than membership changes (Patroni: a switchover, a
// reinitialize). The executor takes its member operations from Actions
// when the engine offers it, else from Engine.Members.
type Actioner interface {
	Actions(o ProbeOptions) MemberOps
}

// Reporter is offered by an engine that describes a member in its own
// words for a report (kubectl hactl report): the documents its own tools
// print (etcd's member list and endpoint status, Patroni's /cluster,
// /history and /config). It only reads. Each file's name is relative to
// the member's directory in the report; a document that could not be
// read is a file whose Err says why.
type Reporter interface {
	Report(ctx context.Context, t Target, o ProbeOptions) []ReportFile
}

// ReportFile is one document of a Reporter.
type ReportFile struct {
	Name string
	Data []byte
	Err  error
}

// Reinitializer is implemented by the member operations of an engine
// whose replicas can rebuild their data from the primary in place
// (Patroni's POST /reinitialize). Reinitialize is sent to the member
// itself and returns once the engine started the work (not when it is
// done): observe until the member streams again. It reports a member
// already rebuilding as ErrAlready, one not ready for it as ErrNotYet and
// a request sent without an answer as ErrOutcomeUnknown.
type Reinitializer interface {
	Reinitialize(ctx context.Context, member Target) error
}

// Outcomes of member operations.
var (
	// ErrAlready: the engine already is as the operation would make it.
	ErrAlready = errors.New("already done")
	// ErrNotYet: the engine is not ready for the operation yet (a learner
	// not in sync); observe again and retry.
	ErrNotYet = errors.New("not yet")
	// ErrOutcomeUnknown: the request was sent and no answer came back (a
	// timeout, a broken connection): the engine may have committed it.
	// The caller observes to find out; it never reads it as "nothing
	// changed".
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrPrecondition: the engine refused the operation because the
	// world is not as the caller observed it (Patroni's 412 on a
	// switchover naming a leader that no longer leads). Nothing was
	// changed; the caller reports a fence conflict.
	ErrPrecondition = errors.New("engine precondition failed")
	// ErrUnauthorized: the member refused the request's credentials
	// before acting (Patroni's 401 or 403). Nothing was changed.
	ErrUnauthorized = errors.New("the member refused the credentials")
	// ErrForbidden: the member refused this client before acting
	// (Patroni's 403: restapi.allowlist, or verify_client without a
	// client certificate). Nothing was changed.
	ErrForbidden = errors.New("the member refused this client")
)

// ErrForward marks a connection that reached its transport but not the
// port inside the pod: for a port-forward, the API server or kubelet
// reported an error on the error stream (nothing listens on the port, the
// pod is gone). A DialFunc's connection returns it, wrapped, from Read or
// Write; engines report it as a connect failure rather than a silent
// member.
var ErrForward = errors.New("forwarding to the pod failed")
