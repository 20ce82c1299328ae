package runner

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The kubelet's marks on the mirror pod of a static pod, and kubeadm's on
// its control-plane static pods.
const (
	// MirrorAnnotation (kubernetes.io/config.mirror) is on every mirror
	// pod: the kubelet creates it for a static pod, with the static pod's
	// hash. kwok's stages skip pods that carry it.
	MirrorAnnotation = "kubernetes.io/config.mirror"
	// TierLabel and ControlPlaneTier are the label kubeadm puts on its
	// control-plane static pods (tier=control-plane, beside component).
	TierLabel        = "tier"
	ControlPlaneTier = "control-plane"
)

// controlPlaneSelector selects the pods of the runner's third watch: the
// control-plane static pods it runs as their node's kubelet would.
const controlPlaneSelector = TierLabel + "=" + ControlPlaneTier

// IsMirror reports whether pod is the mirror pod of a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[MirrorAnnotation]
	return ok
}

// IsStaticControlPlane reports whether the runner plays the kubelet for
// pod as a control-plane static pod: a mirror pod labelled
// tier=control-plane (kubeadm's etcd, kube-apiserver, ...).
func IsStaticControlPlane(pod *corev1.Pod) bool {
	return IsMirror(pod) && pod.Labels[TierLabel] == ControlPlaneTier
}

// The cozystack etcd-operator's marks on the member pods it creates
// (github.com/cozystack/etcd-operator, controllers/helpers.go and
// etcdmember_controller.go buildPod): every one is labelled with its
// cluster and controlled by its EtcdMember.
const (
	// OperatorGroup is the operator's API group.
	OperatorGroup = "etcd-operator.cozystack.io"
	// OperatorMemberKind is the kind of the object controlling a member
	// pod.
	OperatorMemberKind = "EtcdMember"
	// OperatorClusterLabel is the operator's cluster label, on every
	// object it creates: the runner's fourth watch selects pods by it.
	OperatorClusterLabel = OperatorGroup + "/cluster"
)

// IsOperatorMember reports whether the runner plays the kubelet for pod
// as one of the cozystack etcd-operator's member pods: its controller
// owner is an EtcdMember of the operator's group (any version). Such pods
// carry nothing of hactl's; the runner finds them, as the operator's own
// pods, by the operator's marks only.
func IsOperatorMember(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Controller == nil || !*o.Controller || o.Kind != OperatorMemberKind {
			continue
		}
		if g, _, _ := strings.Cut(o.APIVersion, "/"); g == OperatorGroup {
			return true
		}
	}
	return false
}

// Bitnami's etcd chart (bitnami/charts bitnami/etcd) labels its pods
// app.kubernetes.io/name=etcd and runs Bitnami's entrypoint, which
// self-registers the member when ETCD_ON_K8S=yes: the runner plays the
// kubelet for such pods even though they carry nothing of hactl's.
const (
	// BitnamiNameLabel and BitnamiName are the chart's name label.
	BitnamiNameLabel = "app.kubernetes.io/name"
	BitnamiName      = "etcd"
	// BitnamiSelector selects the pods and StatefulSets of the runner's
	// fifth watch: the chart's name label, without EngineLabel (whose
	// pods the first watch has).
	BitnamiSelector = BitnamiNameLabel + "=" + BitnamiName + ",!" + EngineLabel
	// BitnamiOnK8sEnv is the entrypoint's variable; "yes" marks a member.
	BitnamiOnK8sEnv = "ETCD_ON_K8S"
	// BitnamiMemberQuery is the jq query (a kwok Stage selector's key)
	// that yields something exactly for the pods IsBitnamiMember reports
	// (as far as labels and env go): DoesNotExist selects the others.
	BitnamiMemberQuery = `select(.metadata.labels["` + BitnamiNameLabel + `"] == "` + BitnamiName + `") | ` +
		`.spec.containers[]? | .env[]? | select(.name == "` + BitnamiOnK8sEnv + `" and .value == "yes") | .name`
)

// IsBitnamiMember reports whether the runner plays the kubelet for pod as
// a member of a Bitnami-style etcd: labelled app.kubernetes.io/name=etcd,
// with a container setting ETCD_ON_K8S=yes.
func IsBitnamiMember(pod *corev1.Pod) bool {
	if pod.Labels[BitnamiNameLabel] != BitnamiName {
		return false
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == BitnamiOnK8sEnv && e.Value == "yes" {
				return true
			}
		}
	}
	return false
}

// runs reports whether the runner runs pod's containers: pods labelled
// EngineLabel or RunLabel, control-plane mirror pods, the cozystack
// etcd-operator's member pods, Bitnami-style etcd members, etcd-druid's
// member pods, the Zalando postgres-operator's (Spilo) member pods and
// Crunchy PGO v5's instance pods.
func runs(pod *corev1.Pod) bool {
	if _, ok := pod.Labels[EngineLabel]; ok {
		return true
	}
	if _, ok := pod.Labels[RunLabel]; ok {
		return true
	}
	return IsStaticControlPlane(pod) || IsOperatorMember(pod) || IsBitnamiMember(pod) || IsDruidMember(pod) || IsSpiloMember(pod) ||
		IsPGOMember(pod) || IsCNPGInstance(pod)
}

// hasEngine reports whether pod carries one of the sandbox's own labels.
func hasEngine(pod *corev1.Pod) bool {
	_, e := pod.Labels[EngineLabel]
	_, r := pod.Labels[RunLabel]
	return e || r
}

// listenFlags are the etcd flags whose URLs a container listens on.
var listenFlags = []string{"listen-client-urls", "listen-peer-urls", "listen-metrics-urls"}

// listenPorts are the TCP ports of the URLs container c is told to listen
// on (etcd's --listen-client-urls, --listen-peer-urls and
// --listen-metrics-urls, as --flag=v or --flag v in its command and args,
// or ETCD_LISTEN_* in its env): what a hostNetwork container binds without
// declaring a containerPort.
func listenPorts(c corev1.Container) []int {
	var values []string
	argv := append(append([]string(nil), c.Command...), c.Args...)
	for i, a := range argv {
		for _, f := range listenFlags {
			if v, ok := strings.CutPrefix(a, "--"+f+"="); ok {
				values = append(values, v)
			} else if a == "--"+f && i+1 < len(argv) {
				values = append(values, argv[i+1])
			}
		}
	}
	for _, e := range c.Env {
		for _, f := range listenFlags {
			if e.Name == envName(f) && e.ValueFrom == nil {
				values = append(values, e.Value)
			}
		}
	}
	seen := map[int]bool{}
	var out []int
	for _, v := range values {
		for _, raw := range strings.Split(v, ",") {
			u, err := url.Parse(strings.TrimSpace(raw))
			if err != nil {
				continue
			}
			p, err := strconv.Atoi(u.Port())
			if err != nil || p <= 0 || p > 65535 || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Ints(out)
	return out
}

// forwardPorts are the ports of container c that kubectl port-forward
// reaches: the TCP ports it declares and, in a hostNetwork pod (whose
// containers bind the node's ports and need declare none: kubeadm's etcd
// declares none), the ports of the URLs it listens on.
func forwardPorts(pod *corev1.Pod, c corev1.Container) []int {
	seen := map[int]bool{}
	var out []int
	add := func(p int) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			add(int(p.ContainerPort))
		}
	}
	if pod.Spec.HostNetwork {
		for _, p := range listenPorts(c) {
			add(p)
		}
	}
	// A kubelet forwards any port; the ports the probes check are served
	// for sure, declared or not (PGO declares PostgreSQL's port only, and
	// probes Patroni's REST API on 8008).
	for _, pr := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		switch {
		case pr.HTTPGet != nil && pr.HTTPGet.Port.Type == intstr.Int:
			add(pr.HTTPGet.Port.IntValue())
		case pr.TCPSocket != nil && pr.TCPSocket.Port.Type == intstr.Int:
			add(pr.TCPSocket.Port.IntValue())
		}
	}
	return out
}

// errHostPathMissing says a hostPath volume's type requires something that
// is not there (yet): the kubelet then does not start the pod either.
var errHostPathMissing = errors.New("hostPath type check failed")

// hostPathDir maps hostPath volume v of a pod on a node to its directory
// under nodeRoot (the host directory standing for the node's filesystem
// root), checking or creating it by the volume's type as a kubelet does:
// DirectoryOrCreate (and an unset type, as Docker did) create a missing
// directory, FileOrCreate a missing empty file (its directory must
// exist); Directory, File, Socket, CharDevice and BlockDevice require it.
func hostPathDir(nodeRoot string, v *corev1.HostPathVolumeSource) (string, error) {
	p := path.Clean("/" + v.Path)
	dir := filepath.Join(nodeRoot, filepath.FromSlash(p))
	typ := corev1.HostPathUnset
	if v.Type != nil {
		typ = *v.Type
	}
	fi, err := os.Stat(dir)
	exists := err == nil
	switch typ {
	case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate:
		if !exists {
			return dir, os.MkdirAll(dir, 0o755)
		}
		if typ == corev1.HostPathDirectoryOrCreate && !fi.IsDir() {
			return "", fmt.Errorf("%s: %w: not a directory", v.Path, errHostPathMissing)
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(dir, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", fmt.Errorf("%s: %w: %v", v.Path, errHostPathMissing, err)
			}
			return dir, f.Close()
		}
	case corev1.HostPathDirectory:
		if !exists || !fi.IsDir() {
			return "", fmt.Errorf("%s: %w: no such directory", v.Path, errHostPathMissing)
		}
	default:
		if !exists {
			return "", fmt.Errorf("%s: %w: does not exist", v.Path, errHostPathMissing)
		}
	}
	return dir, nil
}

// dataDirs are the host directories holding the etcd data directory of
// pod's containers when a hostPath volume holds it (kubeadm's /var/lib/etcd):
// what a wipe empties in a pod with no claim. vols maps volume names to
// host directories.
func dataDirs(pod *corev1.Pod, vols map[string]string) []string {
	hostPaths := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = true
		}
	}
	var out []string
	for _, c := range pod.Spec.Containers {
		var dd string
		argv := append(append([]string(nil), c.Command...), c.Args...)
		for i, a := range argv {
			if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
				dd = v
			} else if a == "--data-dir" && i+1 < len(argv) {
				dd = argv[i+1]
			}
		}
		for _, e := range c.Env {
			if e.Name == "ETCD_DATA_DIR" && e.ValueFrom == nil && dd == "" {
				dd = e.Value
			}
		}
		if dd == "" {
			continue
		}
		dd = path.Clean(dd)
		best, host := "", ""
		for _, m := range c.VolumeMounts {
			mp := path.Clean(m.MountPath)
			if !hostPaths[m.Name] || m.SubPath != "" || vols[m.Name] == "" || len(mp) <= len(best) {
				continue
			}
			if dd == mp || strings.HasPrefix(dd, strings.TrimSuffix(mp, "/")+"/") {
				best = mp
				host = filepath.Join(vols[m.Name], filepath.FromSlash(strings.TrimPrefix(dd, mp)))
			}
		}
		if host != "" {
			out = append(out, host)
		}
	}
	return out
}

// clientScheme is the scheme of pod's etcd client URLs: https when a
// container listens for clients over TLS (kubeadm's etcd), else http.
func clientScheme(pod *corev1.Pod) string {
	if pod == nil {
		return "http"
	}
	for _, c := range pod.Spec.Containers {
		argv := append(append([]string(nil), c.Command...), c.Args...)
		for i, a := range argv {
			v, ok := strings.CutPrefix(a, "--listen-client-urls=")
			if !ok && a == "--listen-client-urls" && i+1 < len(argv) {
				v, ok = argv[i+1], true
			}
			if ok && strings.HasPrefix(v, "https://") {
				return "https"
			}
		}
		for _, e := range c.Env {
			if e.Name == "ETCD_LISTEN_CLIENT_URLS" && strings.HasPrefix(e.Value, "https://") {
				return "https"
			}
		}
	}
	return "http"
}
