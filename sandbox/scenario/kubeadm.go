package scenario

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// What kubeadm and the kubelet write (cmd/kubeadm/app/constants,
// pkg/kubelet/types).
const (
	// KubeadmNamespace is where kubeadm's static pods' mirror pods are.
	KubeadmNamespace = "kube-system"
	// KubeadmEtcdImage is the image the manifest names; the runner runs
	// the sandbox's pinned etcd instead.
	KubeadmEtcdImage = "registry.k8s.io/etcd:3.6.16-0"
	// KubeadmAdvertiseClientURLsAnnotation is kubeadm's annotation on its
	// etcd pods.
	KubeadmAdvertiseClientURLsAnnotation = "kubeadm.kubernetes.io/etcd.advertise-client-urls"
	configHashAnnotation                 = "kubernetes.io/config.hash"
	configMirrorAnnotation               = "kubernetes.io/config.mirror"
	configSeenAnnotation                 = "kubernetes.io/config.seen"
	configSourceAnnotation               = "kubernetes.io/config.source"
	kubeadmManifest                      = "/etc/kubernetes/manifests/etcd.yaml"
)

// KubeadmNodes are the control-plane nodes of the kubeadm scenario, one
// etcd member each, in join order.
var KubeadmNodes = []string{"node-1", "node-2", "node-3"}

// KubeadmPodName is the mirror pod of node's etcd static pod.
func KubeadmPodName(node string) string { return "etcd-" + node }

// KubeadmMember is one member of --initial-cluster.
type KubeadmMember struct{ Name, PeerURL string }

// KubeadmEtcdStaticPod is the static pod kubeadm writes to node's
// /etc/kubernetes/manifests/etcd.yaml (GetEtcdPodSpec and ComponentPod in
// cmd/kubeadm/app/phases/etcd/local.go and app/util/staticpod): the flags
// kubeadm sets, sorted by name as kubeadm writes them, for a member whose
// advertise address is ip. initial is --initial-cluster: empty for the
// first control-plane node (itself only, state new), else every member so
// far including this one (state existing).
func KubeadmEtcdStaticPod(node, ip string, initial []KubeadmMember) *corev1.Pod {
	clientURL := "https://" + net.JoinHostPort(ip, "2379")
	peerURL := "https://" + net.JoinHostPort(ip, "2380")
	args := map[string]string{
		"name":                           node,
		"feature-gates":                  "InitialCorruptCheck=true",
		"listen-client-urls":             "https://127.0.0.1:2379," + clientURL,
		"advertise-client-urls":          clientURL,
		"listen-peer-urls":               peerURL,
		"initial-advertise-peer-urls":    peerURL,
		"data-dir":                       "/var/lib/etcd",
		"cert-file":                      "/etc/kubernetes/pki/etcd/server.crt",
		"key-file":                       "/etc/kubernetes/pki/etcd/server.key",
		"trusted-ca-file":                "/etc/kubernetes/pki/etcd/ca.crt",
		"client-cert-auth":               "true",
		"peer-cert-file":                 "/etc/kubernetes/pki/etcd/peer.crt",
		"peer-key-file":                  "/etc/kubernetes/pki/etcd/peer.key",
		"peer-trusted-ca-file":           "/etc/kubernetes/pki/etcd/ca.crt",
		"peer-client-cert-auth":          "true",
		"snapshot-count":                 "10000",
		"listen-metrics-urls":            "http://127.0.0.1:2381",
		"watch-progress-notify-interval": "5s",
		"initial-cluster":                node + "=" + peerURL,
	}
	if len(initial) > 0 {
		var eps []string
		for _, m := range initial {
			eps = append(eps, m.Name+"="+m.PeerURL)
		}
		args["initial-cluster"] = strings.Join(eps, ",")
		args["initial-cluster-state"] = "existing"
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	command := []string{"etcd"}
	for _, k := range names {
		command = append(command, "--"+k+"="+args[k])
	}
	probe := func(path string, initialDelay, timeout, failure, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: "127.0.0.1", Path: path, Port: intstr.FromInt32(2381), Scheme: corev1.URISchemeHTTP,
			}},
			InitialDelaySeconds: initialDelay, TimeoutSeconds: timeout, FailureThreshold: failure, PeriodSeconds: period,
		}
	}
	orCreate := corev1.HostPathDirectoryOrCreate
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "etcd",
			Namespace:   KubeadmNamespace,
			Labels:      map[string]string{"component": "etcd", "tier": "control-plane"},
			Annotations: map[string]string{KubeadmAdvertiseClientURLsAnnotation: clientURL},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "etcd",
				Image:           KubeadmEtcdImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         command,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "etcd-data", MountPath: "/var/lib/etcd"},
					{Name: "etcd-certs", MountPath: "/etc/kubernetes/pki/etcd"},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("100Mi"),
				}},
				// kubeadm's staticpod LivenessProbe, ReadinessProbe and
				// StartupProbe (the default 4 min control-plane health
				// check timeout: 24 periods of 10 s).
				LivenessProbe:  probe("/livez", 10, 15, 8, 10),
				ReadinessProbe: probe("/readyz", 0, 15, 3, 1),
				StartupProbe:   probe("/readyz", 10, 15, 24, 10),
			}},
			PriorityClassName: "system-node-critical",
			HostNetwork:       true,
			Volumes: []corev1.Volume{
				{Name: "etcd-certs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes/pki/etcd", Type: &orCreate}}},
				{Name: "etcd-data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/etcd", Type: &orCreate}}},
			},
			SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}
}

// KubeadmMirrorPod is the mirror pod the kubelet of node (uid nodeUID)
// creates for static pod sp read from /etc/kubernetes/manifests/etcd.yaml
// (pkg/kubelet/config/common.go applyDefaults, pkg/kubelet/pod/
// mirror_client.go): named <name>-<node>, nodeName set, the
// toleration of every NoExecute taint, the annotations config.hash (an
// md5 of the pod and its source, as the kubelet's), config.mirror (the
// same hash), config.seen and config.source=file, and a controller owner
// reference to the Node.
func KubeadmMirrorPod(sp *corev1.Pod, node string, nodeUID types.UID, seen time.Time) (*corev1.Pod, error) {
	b, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	h := md5.New() //nolint:gosec // the kubelet's hash, not a security measure
	h.Write(b)
	fmt.Fprintf(h, "host:%s", node)
	fmt.Fprintf(h, "file:%s", kubeadmManifest)
	hash := hex.EncodeToString(h.Sum(nil))

	p := sp.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{}
	p.Name = sp.Name + "-" + strings.ToLower(node)
	p.Spec.NodeName = node
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[configHashAnnotation] = hash
	p.Annotations[configMirrorAnnotation] = hash
	p.Annotations[configSeenAnnotation] = seen.UTC().Format(time.RFC3339Nano)
	p.Annotations[configSourceAnnotation] = "file"
	controller := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: nodeUID, Controller: &controller}}
	return p, nil
}

// KubeadmClientTLS is a client TLS configuration from the kubeadm PKI
// under a node's root: the etcd CA and the client certificate base
// (pki/etcd/healthcheck-client or pki/apiserver-etcd-client).
func KubeadmClientTLS(root, base string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(KubeadmEtcdPKIDir), "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in the etcd ca.crt")
	}
	p := filepath.Join(root, filepath.FromSlash(KubeadmPKIDir), base)
	cert, err := tls.LoadX509KeyPair(p+".crt", p+".key")
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// kubeadmClient dials exactly the given client URLs with tc.
func kubeadmClient(urls []string, tc *tls.Config) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 2 * time.Second, TLS: tc, Logger: zap.NewNop()})
}

func init() {
	register(&Scenario{
		Name:      "kubeadm",
		Shape:     KubeadmStacked,
		Namespace: KubeadmNamespace,
		Cluster:   "etcd",
		Summary: "kubeadm's stacked etcd on node-1..3: static pods (mirror pods etcd-<node> in kube-system, labels " +
			"component=etcd,tier=control-plane), TLS everywhere with the PKI only as files on the nodes " +
			"(/etc/kubernetes/pki); node-1 started new, node-2 and node-3 added as learners, started existing and promoted",
		run: runKubeadm,
	})
}

// runKubeadm lays out kubeadm's stacked etcd the way `kubeadm init` on
// node-1 and `kubeadm join --control-plane` on node-2 and node-3 do, the
// kubelet of each node creating the mirror pod.
func runKubeadm(ctx context.Context, env Env, s *Scenario) error {
	if env.NodeDir == nil || env.AddressIn == nil {
		return errors.New("the sandbox gives no NodeDir or AddressIn")
	}
	ns := s.ClusterNamespace(env.Namespace)
	ca, err := newEtcdCA()
	if err != nil {
		return err
	}
	ips := map[string]string{}
	uids := map[string]types.UID{}
	for _, node := range KubeadmNodes {
		ip, err := env.AddressIn(ns, KubeadmPodName(node))
		if err != nil {
			return err
		}
		ips[node] = ip
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		uids[node] = n.UID
		// kubeadm init creates the CA; join --control-plane copies it
		// (with --certificate-key) and every node issues its own leaves.
		if err := writeKubeadmEtcdPKI(env.NodeDir(node), ca, node, net.ParseIP(ip)); err != nil {
			return fmt.Errorf("writing %s's PKI: %w", node, err)
		}
	}
	// kubeadm's own etcd client: the API server's client certificate.
	first := KubeadmNodes[0]
	tc, err := KubeadmClientTLS(env.NodeDir(first), "apiserver-etcd-client")
	if err != nil {
		return err
	}
	var joined []string // client URLs of the members so far
	var members []KubeadmMember
	for i, node := range KubeadmNodes {
		peerURL := "https://" + net.JoinHostPort(ips[node], "2380")
		var initial []KubeadmMember
		var c *clientv3.Client
		if i > 0 {
			if c, err = kubeadmClient(joined, tc); err != nil {
				return err
			}
			if err := kubeadmAddLearner(ctx, c, peerURL); err != nil {
				c.Close()
				return fmt.Errorf("adding %s as a learner: %w", node, err)
			}
			initial = append(append([]KubeadmMember(nil), members...), KubeadmMember{Name: node, PeerURL: peerURL})
			env.Logf("scenario %s: added %s as a learner; starting it with state existing", s.Name, node)
		}
		mp, err := KubeadmMirrorPod(KubeadmEtcdStaticPod(node, ips[node], initial), node, uids[node], time.Now())
		if err != nil {
			return err
		}
		if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, mp, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			if c != nil {
				c.Close()
			}
			return fmt.Errorf("creating %s: %w", mp.Name, err)
		}
		if c != nil {
			err := kubeadmPromote(ctx, c, peerURL)
			c.Close()
			if err != nil {
				return fmt.Errorf("promoting %s: %w", node, err)
			}
			env.Logf("scenario %s: promoted %s", s.Name, node)
		}
		if err := waitPodIn(ctx, env, ns, mp.Name, "Ready", PodReady); err != nil {
			return err
		}
		members = append(members, KubeadmMember{Name: node, PeerURL: peerURL})
		joined = append(joined, "https://"+net.JoinHostPort(ips[node], "2379"))
	}
	return kubeadmVerify(ctx, env, joined)
}

// kubeadmAddLearner adds peerURL as a learner unless it is a member
// already, retrying while the cluster refuses (as kubeadm's etcd client
// retries).
func kubeadmAddLearner(ctx context.Context, c *clientv3.Client, peerURL string) error {
	return kubeadmRetry(ctx, func(ctx context.Context) error {
		l, err := c.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, m := range l.Members {
			if slices.Contains(m.PeerURLs, peerURL) {
				return nil
			}
		}
		_, err = c.MemberAddAsLearner(ctx, []string{peerURL})
		return err
	})
}

// kubeadmPromote promotes the learner with peerURL, retrying until it has
// caught up ("can only promote a learner member which is in sync with
// leader"), as kubeadm's MemberPromote does.
func kubeadmPromote(ctx context.Context, c *clientv3.Client, peerURL string) error {
	return kubeadmRetry(ctx, func(ctx context.Context) error {
		l, err := c.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, m := range l.Members {
			if len(m.PeerURLs) > 0 && m.PeerURLs[0] == peerURL {
				if !m.IsLearner {
					return nil
				}
				_, err = c.MemberPromote(ctx, m.ID)
				return err
			}
		}
		return fmt.Errorf("no member with peer URL %s", peerURL)
	})
}

// kubeadmRetry calls f, each call bounded by 5 s, every poll until it
// succeeds or ctx ends.
func kubeadmRetry(ctx context.Context, f func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// kubeadmVerify waits until the members at urls form one cluster of
// len(urls) voting members, each started under its name, and all agree on
// the cluster ID (asked with the healthcheck client certificate).
func kubeadmVerify(ctx context.Context, env Env, urls []string) error {
	tc, err := KubeadmClientTLS(env.NodeDir(KubeadmNodes[0]), "etcd/healthcheck-client")
	if err != nil {
		return err
	}
	var last error
	for {
		last = kubeadmCheck(ctx, urls, tc)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for one %d-member cluster: %w", len(urls), errors.Join(last, ctx.Err()))
		case <-time.After(poll):
		}
	}
}

func kubeadmCheck(ctx context.Context, urls []string, tc *tls.Config) error {
	var cluster uint64
	for _, u := range urls {
		c, err := kubeadmClient([]string{u}, tc)
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		l, err := c.MemberList(actx)
		var st *clientv3.StatusResponse
		if err == nil {
			st, err = c.Status(actx, u)
		}
		cancel()
		c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		if len(l.Members) != len(urls) {
			return fmt.Errorf("%s lists %d members", u, len(l.Members))
		}
		for _, m := range l.Members {
			if m.IsLearner || m.Name == "" {
				return fmt.Errorf("%s: member %x (%q) is a learner or not started", u, m.ID, m.Name)
			}
		}
		if cluster != 0 && st.Header.ClusterId != cluster {
			return fmt.Errorf("%s is in cluster %x, not %x", u, st.Header.ClusterId, cluster)
		}
		cluster = st.Header.ClusterId
	}
	return nil
}

// waitPodIn waits until pod ns/name satisfies ok.
func waitPodIn(ctx context.Context, env Env, ns, name, what string, ok func(*corev1.Pod) bool) error {
	for {
		pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && ok(pod) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pod %s/%s to be %s: %w", ns, name, what, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// KubeadmProbeArgs are the flags that hand `kubectl hactl` the etcd
// client certificate of the node whose filesystem is root, as a user
// copies them off a control-plane node.
func KubeadmProbeArgs(root string) []string {
	d := filepath.Join(root, filepath.FromSlash(KubeadmEtcdPKIDir))
	return []string{"--etcd-cacert", filepath.Join(d, "ca.crt"), "--etcd-cert", filepath.Join(d, "healthcheck-client.crt"), "--etcd-key", filepath.Join(d, "healthcheck-client.key")}
}
