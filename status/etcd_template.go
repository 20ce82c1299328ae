package status

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/model"
)

// This file decodes the pod template: which container runs the engine and
// what its flags and environment say. Every template flag hactl reads is
// decoded here, for status's views and for the facts actions need.

// engineContainer finds the etcd container of a pod template.
func engineContainer(sts *appsv1.StatefulSet) (*corev1.Container, bool) {
	cs := sts.Spec.Template.Spec.Containers
	for i := range cs {
		c := &cs[i]
		if c.Name == "etcd" || imageIsEtcd(c.Image) {
			return c, true
		}
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "etcd" {
			return c, true
		}
	}
	return nil, false
}

func imageIsEtcd(image string) bool { return imageBase(image) == "etcd" }

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
	// reVarRef is a Kubernetes $(VAR) reference in a command or value.
	reVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	reShell  = regexp.MustCompile(`(^|/)(ba|da|a)?sh$`)
)

// decodeTemplate extracts the bootstrap-relevant facts of the template.
func decodeTemplate(sts *appsv1.StatefulSet) model.TemplateFacts {
	t := model.TemplateFacts{ClientPort: 2379}
	t.OperatorOwner = operatorOwner(sts)
	c, ok := engineContainer(sts)
	if !ok {
		cs := sts.Spec.Template.Spec.Containers
		if len(cs) == 0 {
			return t
		}
		c = &cs[0]
	}
	t.Container = c.Name
	t.Image = c.Image
	for _, p := range c.Ports {
		if p.Name == "client" {
			t.ClientPort = int(p.ContainerPort)
		}
	}
	for _, p := range peerTLSPorts(c, sts.Namespace) {
		if p != t.ClientPort {
			t.CertPorts = append(t.CertPorts, p)
		}
	}
	argv := append(append([]string(nil), c.Command...), c.Args...)
	text := strings.Join(argv, " ")
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
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Exec != nil {
		if strings.Contains(strings.Join(c.Lifecycle.PreStop.Exec.Command, " "), "etcdctl") {
			t.PreStopCallsEngineCLI = true
		}
	}
	for _, o := range sts.Spec.Template.Spec.Containers {
		n := strings.ToLower(o.Name + " " + o.Image)
		if o.Name != c.Name && (strings.Contains(n, "backup") || strings.Contains(n, "restore")) {
			t.BackupSidecar = true
		}
	}
	return t
}

// ContainerNamed is the template's container called name, or else its
// first container whose image is etcd; nil when there is neither.
func ContainerNamed(sts *appsv1.StatefulSet, name string) *corev1.Container {
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

// decodeTemplateFlags adds to t what a member recreated from the template
// would boot with: the engine container's --initial-cluster, its
// --initial-cluster-token, and its --data-dir with the volume claim
// template that holds it.
func decodeTemplateFlags(t *model.TemplateFacts, sts *appsv1.StatefulSet) {
	c := ContainerNamed(sts, t.Container)
	if c == nil {
		return
	}
	t.InitialCluster, t.InitialClusterDecoded = initialCluster(c, sts.Namespace)
	t.InitialClusterToken = flagOrEnv(c, reClusterToken, "ETCD_INITIAL_CLUSTER_TOKEN", sts.Namespace)
	if d := flagOrEnv(c, reDataDir, "ETCD_DATA_DIR", sts.Namespace); d != "" && !reVarRef.MatchString(d) && path.IsAbs(d) {
		t.DataDir = path.Clean(d)
		t.DataVolume, t.DataMount = dataVolume(sts, c, t.DataDir)
	}
}

// peerTLSPorts is the port of the container's https peer URL
// (--listen-peer-urls, else --initial-advertise-peer-urls, or their
// ETCD_ variables), none when its peers speak plain http.
func peerTLSPorts(c *corev1.Container, namespace string) []int {
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
func initialCluster(c *corev1.Container, namespace string) ([]model.InitialClusterEntry, bool) {
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
