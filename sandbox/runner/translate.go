package runner

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
	"github.com/hactl-dev/hactl/sandbox/druidstandin"
	"github.com/hactl-dev/hactl/sandbox/spilostandin"
)

// PodEnv is what the runner knows about a pod when it starts one of its
// containers: the addresses standing in for the pod's network, the host
// directories standing in for its volumes, and lookups for the objects its
// environment may reference.
type PodEnv struct {
	Pod *corev1.Pod
	// Address is the member's own loopback address (127.x.1.n). Inside the
	// container, the pod IP, 0.0.0.0, [::], 127.0.0.1, localhost and the
	// pod's DNS names all stand for it.
	Address string
	// PeerAddress, when set and different from Address, is where the
	// member really listens for peers: only the values of
	// --listen-peer-urls (or ETCD_LISTEN_PEER_URLS) map to it, and the
	// runner's peer proxy forwards Address:port to PeerAddress:port.
	PeerAddress string
	// PodIP and HostIP are what the pod's status reports (PodIP is never
	// dialled; it exists so EndpointSlices publish the pod). The downward
	// API resolves status.podIP and status.hostIP to them; the pod IP is
	// then substituted by Address like any other self address.
	PodIP, HostIP string
	// Volumes maps a pod volume's name to the host directory that holds
	// it. A mount of a volume missing here is an error.
	Volumes map[string]string
	// Resolve maps the DNS name of a sandbox pod (any of the forms
	// <pod>.<service>[.<ns>[.svc[.cluster.local]]]) to its address.
	Resolve func(host string) (string, bool)
	// Objects looks up ConfigMaps and Secrets in the pod's namespace.
	Objects Objects
	// PathEnv is the PATH the container runs with: the sandbox's bin dir
	// (etcd, etcdctl) first, then the agent's (kubectl-hactl).
	PathEnv string
	// Home is the container's HOME and default working directory.
	Home string
	// TmpDir, when set, is the container's TMPDIR (unless the container
	// sets TMPDIR itself): a directory of the pod's own.
	TmpDir string
	// Kubeconfig, when set, is a kubeconfig holding a token of the pod's
	// ServiceAccount: the container gets it as KUBECONFIG unless it sets
	// KUBECONFIG itself (the sandbox's stand-in for the token a kubelet
	// mounts; its context is KubeContext).
	Kubeconfig string
	// PodProxy, when set, is the pod network proxy's URL: containers of
	// hactl's agent (AgentCommand) get it as ALL_PROXY, unless they set
	// ALL_PROXY themselves, to reach pod IPs.
	PodProxy string
	// Hosts, for a stand-in's container (druidstandin), maps the DNS
	// names it may meet in what it reads at run time (its StatefulSet's
	// pods, its host aliases) to sandbox addresses.
	Hosts map[string]string
}

// Objects reads the data of ConfigMaps and Secrets in the pod's namespace.
type Objects interface {
	// ConfigMap returns the ConfigMap's data; found is false when it does
	// not exist.
	ConfigMap(name string) (data map[string]string, found bool, err error)
	// Secret returns the Secret's data; found is false when it does not
	// exist.
	Secret(name string) (data map[string]string, found bool, err error)
}

// Launch is one container translated into a host process.
type Launch struct {
	Container string
	// Path is the executable on this host.
	Path string
	// Argv is the full argument vector, Argv[0] as the pod spec wrote it.
	Argv []string
	// Env is the complete environment (nothing is inherited).
	Env []string
	// Dir is the working directory.
	Dir string
	// PeerPorts are the ports the process listens on at PeerAddress for
	// peers; the runner proxies Address:port to them.
	PeerPorts []int
	// Readiness is the container's readiness probe, translated; nil means
	// ready as soon as the process runs.
	Readiness *Probe
	// Credential, when set, is the user the process runs as (the pod's
	// runAsUser/runAsGroup, honoured when the runner runs as root), and
	// AmbientCaps the capabilities it keeps (see identity).
	Credential  *syscall.Credential
	AmbientCaps []uintptr
}

// ProbeKind says how a probe checks.
type ProbeKind int

// Probe kinds.
const (
	ProbeHTTP ProbeKind = iota + 1
	ProbeTCP
	ProbeExec
)

func (k ProbeKind) String() string {
	switch k {
	case ProbeHTTP:
		return "http"
	case ProbeTCP:
		return "tcp"
	case ProbeExec:
		return "exec"
	}
	return "unknown"
}

// Probe is a readiness probe translated to this host.
type Probe struct {
	Kind ProbeKind
	// URL is the HTTP(S) URL an HTTP probe GETs.
	URL string
	// Addr is the host:port a TCP probe dials.
	Addr string
	// Exec is the command an exec probe runs (Path, Argv, Env, Dir).
	Exec *Launch
	// Kubelet semantics, with the Kubernetes defaults filled in.
	InitialDelay, Period, Timeout      time.Duration
	SuccessThreshold, FailureThreshold int
}

// ErrUnsupported marks a pod spec the runner cannot run.
var ErrUnsupported = errors.New("unsupported by the sandbox runner")

// imageEntrypoints gives the default command of images whose spec omits
// command, by the image's base name.
var imageEntrypoints = map[string][]string{
	"etcd": {"/usr/local/bin/etcd"},
}

// Translate turns container c of pe.Pod into a host process, as a kubelet
// would start it minus the image: the container's own command, args and
// environment, with $(VAR) references and the downward API resolved, and
// only addresses (and volume mount paths) substituted so the member runs
// on its loopback address with its data in the PVC's directory.
func Translate(pe PodEnv, c *corev1.Container) (Launch, error) {
	l := Launch{Container: c.Name}
	env, err := containerEnv(pe, c)
	if err != nil {
		return l, fmt.Errorf("container %s: %w", c.Name, err)
	}
	lookup := func(k string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if env[i].name == k {
				return env[i].value, true
			}
		}
		return "", false
	}

	argv := append([]string(nil), c.Command...)
	standInCmd, isStandIn := standIn(c)
	if len(argv) == 0 && isStandIn {
		argv = append(argv, standInCmd)
	}
	spiloCmd, isSpilo := spiloStandIn(c)
	if isSpilo {
		argv = append(argv, spiloCmd)
	}
	cnpgCmd, isCNPG := cnpgStandIn(pe.Pod, c)
	if isCNPG {
		// cnpg's instance manager (/controller/manager, copied into the
		// pod by its bootstrap-controller init container) is stood in
		// for: its arguments (instance run ...) pass on.
		argv[0] = cnpgCmd
	}
	if len(argv) == 0 {
		ep, ok := imageEntrypoints[model.ImageBase(c.Image)]
		if !ok {
			return l, fmt.Errorf("container %s: image %q has no known entrypoint and the spec sets no command: %w", c.Name, c.Image, ErrUnsupported)
		}
		argv = append(argv, ep...)
	}
	argv = append(argv, c.Args...)
	for i := range argv {
		argv[i] = expand(argv[i], lookup)
	}

	s, err := newSubstituter(pe, c)
	if err != nil {
		return l, fmt.Errorf("container %s: %w", c.Name, err)
	}
	for i := range argv {
		peer := i > 0 && argv[i-1] == "--listen-peer-urls"
		argv[i] = s.apply(argv[i], peer)
	}
	l.Argv = argv

	vars := map[string]string{
		"PATH":     pe.PathEnv,
		"HOSTNAME": pe.Pod.Name,
		"HOME":     pe.Home,
	}
	order := []string{"PATH", "HOSTNAME", "HOME"}
	for _, e := range env {
		v := e.value
		if !storeEnv(e.name) && !publishedIPEnv(e.name) {
			v = s.apply(v, e.name == "ETCD_LISTEN_PEER_URLS")
		}
		if e.name == "PATH" {
			v = pe.PathEnv + ":" + v
		}
		if _, ok := vars[e.name]; !ok {
			order = append(order, e.name)
		}
		vars[e.name] = v
	}
	extras := [][2]string{{"TMPDIR", pe.TmpDir}, {"KUBECONFIG", pe.Kubeconfig}}
	if pe.Kubeconfig != "" && pe.Pod != nil && IsPGOMember(pe.Pod) && c.Name == PGODatabase {
		// PGO's Patroni finds the API server in-cluster; here it reads
		// KUBECONFIG, and Patroni 3.0.2 ignores its current-context.
		extras = append(extras, [2]string{"PATRONI_KUBERNETES_CONTEXT", KubeContext})
	}
	for _, extra := range extras {
		if _, set := vars[extra[0]]; !set && extra[1] != "" {
			vars[extra[0]] = extra[1]
			order = append(order, extra[0])
		}
	}
	if isStandIn {
		v, err := standInContext(pe, c)
		if err != nil {
			return l, fmt.Errorf("container %s: %w", c.Name, err)
		}
		vars[druidstandin.ContextEnv] = v
		order = append(order, druidstandin.ContextEnv)
	}
	if isSpilo {
		// The pod's reported IP, for Patroni's Endpoints (POD_IP is the
		// member's address).
		vars[spilostandin.PodIPEnv] = pe.PodIP
		order = append(order, spilostandin.PodIPEnv)
	}
	if isCNPG {
		// What a cnpg pod's environment does not say: where the member
		// listens, the pod's reported IP, the image (its PostgreSQL
		// major).
		for _, kv := range [][2]string{{cnpgstandin.AddressEnv, pe.Address}, {cnpgstandin.PodIPEnv, pe.PodIP}, {cnpgstandin.ImageEnv, c.Image}} {
			vars[kv[0]] = kv[1]
			order = append(order, kv[0])
		}
	}
	for _, k := range order {
		l.Env = append(l.Env, k+"="+vars[k])
	}

	l.Dir = pe.Home
	if c.WorkingDir != "" {
		l.Dir = s.apply(c.WorkingDir, false)
	}
	l.Path, err = lookPath(argv[0], vars["PATH"])
	if err != nil {
		return l, fmt.Errorf("container %s: %w", c.Name, err)
	}
	if _, set := vars["ALL_PROXY"]; !set && pe.PodProxy != "" && filepath.Base(l.Path) == AgentCommand {
		l.Env = append(l.Env, "ALL_PROXY="+pe.PodProxy)
	}
	l.PeerPorts = s.peerPorts()
	if isStandIn && standInCmd == druidstandin.WrapperCommand && pe.PeerAddress != "" && pe.PeerAddress != pe.Address {
		// The wrapper's etcd listens for peers on PeerAddress (see
		// druidstandin's translateConfig): druid names the peer port
		// "server".
		for _, p := range c.Ports {
			if p.Name == "server" && !slices.Contains(l.PeerPorts, int(p.ContainerPort)) {
				l.PeerPorts = append(l.PeerPorts, int(p.ContainerPort))
			}
		}
	}
	if c.ReadinessProbe != nil {
		l.Readiness, err = translateProbe(pe, c, c.ReadinessProbe, lookup, s, l)
		if err != nil {
			return l, fmt.Errorf("container %s: readiness probe: %w", c.Name, err)
		}
	}
	return l, nil
}

// storeEnv reports whether an environment variable belongs to an object
// store (hactl's store Secret keys and the SDKs' settings: AWS_*,
// AZURE_STORAGE_*, GOOGLE_APPLICATION_CREDENTIALS_JSON). They name nothing
// of the pod's (a connection string's or a key's token_uri's 127.0.0.1 is
// the host's emulator, not the pod) and pass unchanged.
func storeEnv(name string) bool {
	return strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "AZURE_STORAGE_") ||
		name == "GOOGLE_APPLICATION_CREDENTIALS_JSON"
}

// publishedIPEnv reports whether an environment variable names the pod's
// IP only to publish it, never to dial or bind it: Patroni's
// kubernetes.pod_ip (PATRONI_KUBERNETES_POD_IP), the address of the
// leader's Endpoints with use_endpoints, which the API server refuses in
// the loopback range. It keeps the reported pod IP (10.244.b.n) rather
// than becoming the member's address.
func publishedIPEnv(name string) bool { return name == "PATRONI_KUBERNETES_POD_IP" }

func translateProbe(pe PodEnv, c *corev1.Container, p *corev1.Probe, lookup func(string) (string, bool), s *substituter, l Launch) (*Probe, error) {
	pr := &Probe{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           seconds(p.PeriodSeconds, 10),
		Timeout:          seconds(p.TimeoutSeconds, 1),
		SuccessThreshold: orDefault(p.SuccessThreshold, 1),
		FailureThreshold: orDefault(p.FailureThreshold, 3),
	}
	port := func(ip intstr.IntOrString) (int, error) {
		if ip.Type == intstr.Int {
			return ip.IntValue(), nil
		}
		for _, cp := range c.Ports {
			if cp.Name == ip.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
		return 0, fmt.Errorf("no container port named %q", ip.StrVal)
	}
	host := func(h string) string {
		if h == "" {
			return pe.Address
		}
		return s.addresses(h, pe.Address)
	}
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		n, err := port(g.Port)
		if err != nil {
			return nil, err
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		pth := g.Path
		if pth == "" {
			pth = "/"
		} else if !strings.HasPrefix(pth, "/") {
			pth = "/" + pth
		}
		pr.Kind = ProbeHTTP
		pr.URL = scheme + "://" + hostPort(host(g.Host), n) + pth
	case p.TCPSocket != nil:
		n, err := port(p.TCPSocket.Port)
		if err != nil {
			return nil, err
		}
		pr.Kind = ProbeTCP
		pr.Addr = hostPort(host(p.TCPSocket.Host), n)
	case p.Exec != nil:
		if len(p.Exec.Command) == 0 {
			return nil, errors.New("exec probe without a command")
		}
		argv := make([]string, len(p.Exec.Command))
		for i, a := range p.Exec.Command {
			argv[i] = s.apply(expand(a, lookup), false)
		}
		var pathEnv string
		for _, kv := range l.Env {
			if strings.HasPrefix(kv, "PATH=") {
				pathEnv = kv[len("PATH="):]
			}
		}
		exe, err := lookPath(argv[0], pathEnv)
		if err != nil {
			return nil, err
		}
		pr.Kind = ProbeExec
		pr.Exec = &Launch{Container: c.Name, Path: exe, Argv: argv, Env: l.Env, Dir: l.Dir}
	default:
		return nil, fmt.Errorf("probe handler: %w", ErrUnsupported)
	}
	return pr, nil
}

func seconds(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func orDefault(v int32, def int) int {
	if v <= 0 {
		return def
	}
	return int(v)
}

// Substitute rewrites strings the way Translate rewrites c's arguments
// (addresses, DNS names, mount paths), for flags given from outside the
// pod spec, such as a Rebootstrap's.
func Substitute(pe PodEnv, c *corev1.Container, in []string) ([]string, error) {
	s, err := newSubstituter(pe, c)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = s.apply(v, false)
	}
	return out, nil
}

// lookPath finds name as a container runtime would, except that an
// absolute path that does not exist on this host (/usr/local/bin/etcd in
// an image) is looked up by its base name on pathEnv.
func lookPath(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		if isExecutable(name) {
			return name, nil
		}
		name = filepath.Base(name)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found on PATH %s", name, pathEnv)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

type envVar struct{ name, value string }

// containerEnv resolves c's environment in the kubelet's order: envFrom
// sources first, then env entries, each env value $(VAR)-expanded against
// the variables defined before it.
func containerEnv(pe PodEnv, c *corev1.Container) ([]envVar, error) {
	var out []envVar
	lookup := func(k string) (string, bool) {
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].name == k {
				return out[i].value, true
			}
		}
		return "", false
	}
	for _, from := range c.EnvFrom {
		var (
			data     map[string]string
			found    bool
			err      error
			what     string
			optional bool
		)
		switch {
		case from.ConfigMapRef != nil:
			what = "ConfigMap " + from.ConfigMapRef.Name
			optional = from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional
			data, found, err = objectsOf(pe).ConfigMap(from.ConfigMapRef.Name)
		case from.SecretRef != nil:
			what = "Secret " + from.SecretRef.Name
			optional = from.SecretRef.Optional != nil && *from.SecretRef.Optional
			data, found, err = objectsOf(pe).Secret(from.SecretRef.Name)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if !found {
			if optional {
				continue
			}
			return nil, fmt.Errorf("envFrom: %s not found", what)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, envVar{from.Prefix + k, data[k]})
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out = append(out, envVar{e.Name, expand(e.Value, lookup)})
			continue
		}
		v, ok, err := valueFrom(pe, c, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			out = append(out, envVar{e.Name, v})
		}
	}
	return out, nil
}

func objectsOf(pe PodEnv) Objects {
	if pe.Objects == nil {
		return noObjects{}
	}
	return pe.Objects
}

type noObjects struct{}

func (noObjects) ConfigMap(string) (map[string]string, bool, error) { return nil, false, nil }
func (noObjects) Secret(string) (map[string]string, bool, error)    { return nil, false, nil }

var reFieldKey = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']+)'\]$`)

// valueFrom resolves one env valueFrom; ok is false for a missing
// optional reference (the variable is then not set, as with a kubelet).
func valueFrom(pe PodEnv, c *corev1.Container, vf *corev1.EnvVarSource) (string, bool, error) {
	p := pe.Pod
	switch {
	case vf.FieldRef != nil:
		switch f := vf.FieldRef.FieldPath; f {
		case "metadata.name":
			return p.Name, true, nil
		case "metadata.namespace":
			return p.Namespace, true, nil
		case "metadata.uid":
			return string(p.UID), true, nil
		case "spec.nodeName":
			return p.Spec.NodeName, true, nil
		case "spec.serviceAccountName":
			return p.Spec.ServiceAccountName, true, nil
		case "status.podIP", "status.podIPs":
			return pe.PodIP, true, nil
		case "status.hostIP", "status.hostIPs":
			return pe.HostIP, true, nil
		default:
			if m := reFieldKey.FindStringSubmatch(f); m != nil {
				if m[1] == "labels" {
					return p.Labels[m[2]], true, nil
				}
				return p.Annotations[m[2]], true, nil
			}
			return "", false, fmt.Errorf("fieldRef %q: %w", f, ErrUnsupported)
		}
	case vf.ResourceFieldRef != nil:
		r := vf.ResourceFieldRef
		name := c.Name
		if r.ContainerName != "" {
			name = r.ContainerName
		}
		for i := range p.Spec.Containers {
			cc := &p.Spec.Containers[i]
			if cc.Name != name {
				continue
			}
			list := cc.Resources.Limits
			res := strings.TrimPrefix(r.Resource, "limits.")
			if strings.HasPrefix(r.Resource, "requests.") {
				list, res = cc.Resources.Requests, strings.TrimPrefix(r.Resource, "requests.")
			}
			if q, ok := list[corev1.ResourceName(res)]; ok {
				return strconv.FormatInt(q.Value(), 10), true, nil
			}
			return "0", true, nil
		}
		return "", false, fmt.Errorf("resourceFieldRef: no container %q", name)
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		data, found, err := objectsOf(pe).ConfigMap(r.Name)
		return keyRef("ConfigMap", r.Name, r.Key, r.Optional, data, found, err)
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		data, found, err := objectsOf(pe).Secret(r.Name)
		return keyRef("Secret", r.Name, r.Key, r.Optional, data, found, err)
	}
	return "", false, fmt.Errorf("empty valueFrom: %w", ErrUnsupported)
}

func keyRef(kind, name, key string, optional *bool, data map[string]string, found bool, err error) (string, bool, error) {
	if err != nil {
		return "", false, err
	}
	v, ok := data[key]
	if found && ok {
		return v, true, nil
	}
	if optional != nil && *optional {
		return "", false, nil
	}
	if !found {
		return "", false, fmt.Errorf("%s %s not found", kind, name)
	}
	return "", false, fmt.Errorf("%s %s has no key %q", kind, name, key)
}

// substituter rewrites the strings a container sees: addresses and DNS
// names to loopback addresses, mount paths to host directories.
type substituter struct {
	pe     PodEnv
	mounts []mount // longest mount path first
	ports  map[int]bool
}

type mount struct{ path, host string }

func newSubstituter(pe PodEnv, c *corev1.Container) (*substituter, error) {
	s := &substituter{pe: pe, ports: map[int]bool{}}
	for _, m := range c.VolumeMounts {
		host, ok := pe.Volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume %q is not available on this host", m.Name)
		}
		if m.SubPath != "" {
			host = filepath.Join(host, m.SubPath)
		}
		s.mounts = append(s.mounts, mount{path: path.Clean(m.MountPath), host: host})
	}
	sort.SliceStable(s.mounts, func(i, j int) bool { return len(s.mounts[i].path) > len(s.mounts[j].path) })
	return s, nil
}

var (
	reHost = regexp.MustCompile(`[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+`)
	// reStarListen matches "*:port", every interface as Patroni and
	// PostgreSQL write it (PGO's PATRONI_RESTAPI_LISTEN *:8008), which
	// stands for the member's address as 0.0.0.0 does.
	reStarListen = regexp.MustCompile(`(^|[\s,="'])\*(:[0-9]+)`)
	reLocalhost  = regexp.MustCompile(`(^|[^A-Za-z0-9._-])localhost($|[^A-Za-z0-9._-])`)
	reListen     = regexp.MustCompile(`--listen-peer-urls(=|\s+)["']?([^\s"';]+)`)
	reURLList    = regexp.MustCompile(`^(--[A-Za-z0-9-]+=)?([^,\s]+(,[^,\s]+)+)$`)
)

// reStoreURL matches an object store's URL (hactl's --store): its host is
// a bucket, and its endpoint (s3://bucket?endpoint=http://127.0.0.1:PORT,
// the sandbox's versitygw) a service outside the pod, reached on this host
// as written.
var reStoreURL = regexp.MustCompile(`\b(s3|gs|azblob)://[^\s"'` + "`" + `;]+`)

// apply rewrites s, except object store URLs in it, which it keeps as
// they are. peer says s is (entirely) the value of --listen-peer-urls,
// whose self addresses map to PeerAddress.
func (s *substituter) apply(v string, peer bool) string {
	urls := reStoreURL.FindAllString(v, -1)
	if len(urls) == 0 {
		return s.rewrite(v, peer)
	}
	// Set them aside behind placeholders no rewrite touches.
	i := 0
	v = reStoreURL.ReplaceAllStringFunc(v, func(string) string {
		i++
		return "\x00" + strconv.Itoa(i-1) + "\x00"
	})
	v = s.rewrite(v, peer)
	for i, u := range urls {
		v = strings.Replace(v, "\x00"+strconv.Itoa(i)+"\x00", u, 1)
	}
	return v
}

// rewrite substitutes addresses, DNS names and mount paths in v.
func (s *substituter) rewrite(v string, peer bool) string {
	if peer {
		v = s.addresses(v, s.peerSelf())
		s.notePeerPorts(v)
	} else {
		// A script may carry --listen-peer-urls inside one string.
		v = reListen.ReplaceAllStringFunc(v, func(m string) string {
			sub := reListen.FindStringSubmatch(m)
			val := s.addresses(sub[2], s.peerSelf())
			s.notePeerPorts(val)
			return strings.TrimSuffix(m, sub[2]) + val
		})
		v = s.addresses(v, s.pe.Address)
	}
	v = dedupeList(v)
	return s.paths(v)
}

func (s *substituter) peerSelf() string {
	if s.pe.PeerAddress != "" {
		return s.pe.PeerAddress
	}
	return s.pe.Address
}

// addresses replaces self addresses and pod DNS names in v; self is what
// this pod's own addresses become.
func (s *substituter) addresses(v, self string) string {
	v = reHost.ReplaceAllStringFunc(v, func(h string) string {
		switch h {
		case "0.0.0.0", "127.0.0.1", s.pe.Address:
			return self
		}
		if s.pe.PodIP != "" && h == s.pe.PodIP {
			return self
		}
		if s.pe.Resolve != nil {
			if a, ok := s.pe.Resolve(h); ok {
				if a == s.pe.Address {
					return self
				}
				return a
			}
		}
		return h
	})
	v = strings.ReplaceAll(v, "[::]", self)
	v = reStarListen.ReplaceAllString(v, "${1}"+self+"${2}")
	return reLocalhost.ReplaceAllString(v, "${1}"+self+"${2}")
}

// notePeerPorts records the ports of the URLs in v that listen on the
// peer address.
func (s *substituter) notePeerPorts(v string) {
	if s.pe.PeerAddress == "" || s.pe.PeerAddress == s.pe.Address {
		return
	}
	for _, raw := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Hostname() != s.pe.PeerAddress {
			continue
		}
		if p, err := strconv.Atoi(u.Port()); err == nil {
			s.ports[p] = true
		}
	}
}

func (s *substituter) peerPorts() []int {
	out := make([]int, 0, len(s.ports))
	for p := range s.ports {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// paths replaces mount paths (at path boundaries) by host directories,
// in one pass: a host directory put in is never rewritten again (the
// sandbox's directory may lie under a mount path, such as /tmp).
func (s *substituter) paths(v string) string {
	var b strings.Builder
	i := 0
	for i < len(v) {
		if i == 0 || !isPathChar(v[i-1]) {
			matched := false
			for _, m := range s.mounts { // longest first
				if m.path == "/" || !strings.HasPrefix(v[i:], m.path) {
					continue
				}
				end := i + len(m.path)
				if end == len(v) || !isPathChar(v[end]) || v[end] == '/' {
					b.WriteString(m.host)
					i, matched = end, true
					break
				}
			}
			if matched {
				continue
			}
		}
		b.WriteByte(v[i])
		i++
	}
	return b.String()
}

func isPathChar(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// dedupeList drops repeated items of a comma-separated list (optionally
// after --flag=), which address substitution can create: inside a pod,
// http://0.0.0.0:2379,http://127.0.0.1:2379 are two listeners; on the
// host they are the same one, and etcd would fail to bind it twice.
func dedupeList(v string) string {
	m := reURLList.FindStringSubmatch(v)
	if m == nil {
		return v
	}
	seen := map[string]bool{}
	var items []string
	for _, it := range strings.Split(m[2], ",") {
		if !seen[it] {
			seen[it] = true
			items = append(items, it)
		}
	}
	return m[1] + strings.Join(items, ",")
}

// hostPort joins an address and port.
func hostPort(addr string, port int) string { return net.JoinHostPort(addr, strconv.Itoa(port)) }
