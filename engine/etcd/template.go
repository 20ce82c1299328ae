package etcd

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// This file decodes the pod template: which container runs etcd and what
// its flags and environment say. Every template flag hactl reads is
// decoded here, for status's views and for the facts actions need.

var _ engine.Decoder = Engine{}

// Recognises implements engine.Decoder: a container called etcd, running
// the etcd image or the etcd binary.
func (Engine) Recognises(t model.PodTemplate) bool {
	_, ok := engineContainer(t)
	return ok
}

// engineContainer finds the etcd container of a pod template.
func engineContainer(t model.PodTemplate) (*model.Container, bool) {
	cs := t.Containers
	for i := range cs {
		c := &cs[i]
		if c.Name == "etcd" || model.ImageBase(c.Image) == "etcd" {
			return c, true
		}
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "etcd" {
			return c, true
		}
	}
	return nil, false
}

// flagPattern matches the command-line flag --name with its value,
// written --name=value or --name value and optionally quoted; the value
// (matching value) is the first submatch.
func flagPattern(name, value string) *regexp.Regexp {
	return regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `(?:=|\s+)["']?(` + value + `)`)
}

// The flags of the engine container that hactl decodes.
var (
	reState          = flagPattern("initial-cluster-state", `new|existing`)
	reQuota          = flagPattern("quota-backend-bytes", `\d+`)
	reInitialCluster = flagPattern("initial-cluster", `[^\s"']+`)
	reClusterToken   = flagPattern("initial-cluster-token", `[^\s"']+`)
	reDataDir        = flagPattern("data-dir", `[^\s"']+`)
	reListenPeer     = flagPattern("listen-peer-urls", `[^\s"']+`)
	reAdvertisePeer  = flagPattern("initial-advertise-peer-urls", `[^\s"']+`)
	// reClientCertAuth is the boolean --client-cert-auth, bare or true.
	reClientCertAuth = regexp.MustCompile(`--client-cert-auth(?:=["']?(?i:true|t|1)["']?)?(?:[\s"']|$)`)
	// reVarRef is a Kubernetes $(VAR) reference in a command or value.
	reVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	reShell  = regexp.MustCompile(`(^|/)(ba|da|a)?sh$`)
	// reMetricsURL is the port of the first plaintext URL of
	// --listen-metrics-urls (a comma-separated list).
	reMetricsURL = regexp.MustCompile(`--listen-metrics-urls(?:=|\s+)["']?(?:[^\s"',]*,)*http://[^\s/"',]*:(\d+)`)
)

// Template implements engine.Decoder: the bootstrap-relevant facts of
// the template.
func (Engine) Template(pt model.PodTemplate) model.TemplateFacts {
	t := model.TemplateFacts{ClientPort: 2379}
	c, ok := engineContainer(pt)
	if !ok {
		if len(pt.Containers) == 0 {
			return t
		}
		c = &pt.Containers[0]
	}
	t.Container = c.Name
	t.Image = c.Image
	for _, p := range c.Ports {
		if p.Name == "client" {
			t.ClientPort = p.Port
		}
	}
	for _, p := range peerTLSPorts(c, pt.Namespace) {
		if p != t.ClientPort {
			t.CertPorts = append(t.CertPorts, p)
		}
	}
	text := strings.Join(c.Argv(), " ")
	if m := reMetricsURL.FindStringSubmatch(text); m != nil {
		t.MetricsPort, _ = strconv.Atoi(m[1])
	}
	if len(c.Command) > 0 && reShell.MatchString(c.Command[0]) {
		t.ShellWrapper = true
	} else if len(c.Command) == 0 && len(c.Args) > 0 && strings.HasSuffix(c.Args[0], ".sh") {
		t.ShellWrapper = true
	}
	if m := reState.FindStringSubmatch(text); m != nil {
		t.InitialClusterState, t.InitialClusterStateFrom = m[1], "arg"
	}
	if m := reQuota.FindStringSubmatch(text); m != nil {
		t.QuotaBackendBytes, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if strings.Contains(text, "member add") {
		t.SelfRegistering = true
	}
	t.ClientCertAuth = reClientCertAuth.MatchString(text)
	for _, e := range c.Env {
		switch e.Name {
		case "ETCD_INITIAL_CLUSTER_STATE":
			if e.Value != "" && t.InitialClusterState == "" {
				t.InitialClusterState, t.InitialClusterStateFrom = e.Value, "env"
			}
		case "ETCD_QUOTA_BACKEND_BYTES":
			if n, err := strconv.ParseInt(e.Value, 10, 64); err == nil && t.QuotaBackendBytes == 0 {
				t.QuotaBackendBytes = n
			}
		case "ETCD_ROOT_PASSWORD":
			// Bitnami's chart: the root user's password, from the Secret
			// it creates (<fullname>, key etcd-root-password). A literal
			// value is not taken: it would be a password in the template.
			if e.Secret != nil && t.Password == nil {
				ref := *e.Secret
				t.User, t.Password, t.PasswordFrom = "root", &ref, "env ETCD_ROOT_PASSWORD of container "+c.Name
			}
		case "ETCD_CLIENT_CERT_AUTH":
			if b, err := strconv.ParseBool(e.Value); err == nil && b {
				t.ClientCertAuth = true
			}
		case "ETCD_ON_K8S":
			if e.Value == "yes" {
				t.SelfRegistering = true
			}
		case "ETCD_START_FROM_SNAPSHOT":
			if e.Value == "yes" {
				t.StartFromSnapshot = true
			}
		}
	}
	if strings.Contains(strings.Join(c.PreStop, " "), "etcdctl") {
		t.PreStopCallsEngineCLI = true
	}
	for _, o := range pt.Containers {
		n := strings.ToLower(o.Name + " " + o.Image)
		if o.Name != c.Name && (strings.Contains(n, "backup") || strings.Contains(n, "restore")) {
			t.BackupSidecar = true
		}
	}
	return t
}

// ContainerNamed is t's container called name, or else its first
// container whose image is etcd; nil when there is neither.
func ContainerNamed(t model.PodTemplate, name string) *model.Container {
	if c := t.Container(name); c != nil {
		return c
	}
	for i := range t.Containers {
		if model.ImageBase(t.Containers[i].Image) == "etcd" {
			return &t.Containers[i]
		}
	}
	return nil
}

// ActionTemplate implements engine.Decoder: what a member recreated from
// the template would boot with, the engine container's --initial-cluster,
// its --initial-cluster-token, and its --data-dir with the volume claim
// template that holds it.
func (Engine) ActionTemplate(pt model.PodTemplate, t *model.TemplateFacts) {
	c := ContainerNamed(pt, t.Container)
	if c == nil {
		return
	}
	t.InitialCluster, t.InitialClusterDecoded = initialCluster(c, pt.Namespace)
	t.InitialClusterToken = flagOrEnv(c, reClusterToken, "ETCD_INITIAL_CLUSTER_TOKEN", pt.Namespace)
	if d := flagOrEnv(c, reDataDir, "ETCD_DATA_DIR", pt.Namespace); d != "" && !reVarRef.MatchString(d) && path.IsAbs(d) {
		t.DataDir = path.Clean(d)
		t.DataVolume, t.DataMount = dataVolume(pt, c, t.DataDir)
	}
}

// peerTLSPorts is the port of the container's https peer URL
// (--listen-peer-urls, else --initial-advertise-peer-urls, or their
// ETCD_ variables), none when its peers speak plain http.
func peerTLSPorts(c *model.Container, namespace string) []int {
	raw := flagOrEnv(c, reListenPeer, "ETCD_LISTEN_PEER_URLS", namespace)
	if raw == "" {
		raw = flagOrEnv(c, reAdvertisePeer, "ETCD_INITIAL_ADVERTISE_PEER_URLS", namespace)
	}
	for _, s := range strings.Split(raw, ",") {
		// Read as text, not as a URL: a host may still be a shell
		// variable (${HOSTNAME}).
		m := reHTTPSHost.FindStringSubmatch(strings.TrimSpace(s))
		if m == nil {
			continue
		}
		port := 2380
		if p := rePort.FindStringSubmatch(m[1]); p != nil {
			n, err := strconv.Atoi(p[1])
			if err != nil || n <= 0 || n > 65535 {
				continue
			}
			port = n
		}
		return []int{port}
	}
	return nil
}

var (
	// reHTTPSHost is an https URL's host[:port].
	reHTTPSHost = regexp.MustCompile(`^https://([^/]*)`)
	// rePort is a host's :port.
	rePort = regexp.MustCompile(`:(\d+)$`)
)

// initialCluster finds the container's --initial-cluster (or
// ETCD_INITIAL_CLUSTER), resolving $(VAR) references to literal env values
// and to the pod's namespace. A value that does not parse, or still holds
// a reference, counts as decoded but empty: the classifier then refuses
// with the reason.
func initialCluster(c *model.Container, namespace string) ([]model.InitialClusterEntry, bool) {
	raw := flagOrEnv(c, reInitialCluster, "ETCD_INITIAL_CLUSTER", namespace)
	if raw == "" || reVarRef.MatchString(raw) {
		return nil, true
	}
	es, err := model.ParseInitialCluster(raw)
	if err != nil {
		return nil, true
	}
	return es, true
}

// flagOrEnv is the value of the container's flag (matched by re in its
// command and args) or else of its environment variable env, with $(VAR)
// references resolved to literal env values and to the pod's namespace;
// "" when neither is set.
func flagOrEnv(c *model.Container, re *regexp.Regexp, env, namespace string) string {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch e.Ref {
		case model.EnvRefNamespace:
			vars[e.Name] = namespace
		case "":
			vars[e.Name] = e.Value
		}
	}
	raw := ""
	if m := re.FindStringSubmatch(strings.Join(c.Argv(), " ")); m != nil {
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
func dataVolume(t model.PodTemplate, c *model.Container, dir string) (claim, mount string) {
	claims := map[string]bool{}
	for _, n := range t.Claims {
		claims[n] = true
	}
	for _, m := range c.Mounts {
		mp := path.Clean(m.Path)
		if !claims[m.Name] || m.SubPath != "" || (dir != mp && !strings.HasPrefix(dir, mp+"/")) {
			continue
		}
		if len(mp) > len(mount) {
			claim, mount = m.Name, mp
		}
	}
	return claim, mount
}
