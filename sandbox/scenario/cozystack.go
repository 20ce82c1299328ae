package scenario

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/pki"
)

// The cozystack etcd-operator (github.com/cozystack/etcd-operator, API
// v1alpha2, releases v0.5.x) cannot be built here (its module is not
// served), so these scenarios play it: they create its CRDs and, through
// the API, every object it creates for a cluster, as its controllers
// (controllers/etcdcluster_controller.go, etcdmember_controller.go,
// helpers.go) render them, with real etcd members in the pods (the
// runner plays the kubelet for pods an EtcdMember controls). Nothing
// carries a label or annotation of hactl's.
const (
	// CozystackGroup and CozystackVersion are the operator's API.
	CozystackGroup      = "etcd-operator.cozystack.io"
	CozystackVersion    = "v1alpha2"
	CozystackAPIVersion = CozystackGroup + "/" + CozystackVersion
	// CozystackClusterKind and CozystackMemberKind are its kinds.
	CozystackClusterKind = "EtcdCluster"
	CozystackMemberKind  = "EtcdMember"
	// CozystackClusterLabel is on every object of a cluster (its value:
	// the EtcdCluster's name); CozystackRoleLabel=voter on its voters'
	// pods (the PodDisruptionBudget selects them).
	CozystackClusterLabel = CozystackGroup + "/cluster"
	CozystackRoleLabel    = CozystackGroup + "/role"
	CozystackRoleVoter    = "voter"
	// CozystackEtcdVersion is spec.version; CozystackEtcdImage the image
	// the operator resolves for it (quay.io/coreos/etcd:v<version>). The
	// runner runs the sandbox's pinned etcd instead.
	CozystackEtcdVersion = "3.6.16"
	CozystackEtcdImage   = "quay.io/coreos/etcd:v" + CozystackEtcdVersion
	// cozystackReplicas is every scenario's spec.replicas.
	cozystackReplicas = 3
	// cozystackUser is the member pods' runAsUser, runAsGroup and fsGroup.
	cozystackUser = 65532
)

// The operator's resources.
var (
	EtcdClusterGVR = schema.GroupVersionResource{Group: CozystackGroup, Version: CozystackVersion, Resource: "etcdclusters"}
	EtcdMemberGVR  = schema.GroupVersionResource{Group: CozystackGroup, Version: CozystackVersion, Resource: "etcdmembers"}
	crdGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// CozystackServerSecret is the Secret (cert-manager's kind: tls.crt,
// tls.key, ca.crt) holding cluster's members' serving certificate,
// named by spec.tls.client.serverSecretRef.
func CozystackServerSecret(cluster string) string { return cluster + "-server-tls" }

// CozystackOperatorClientSecret is the Secret holding the operator's
// client certificate (CN <cluster>-operator-client; tls.crt, tls.key,
// ca.crt), named by spec.tls.client.operatorClientSecretRef: the
// certificate a client of the members presents (they require one).
func CozystackOperatorClientSecret(cluster string) string { return cluster + "-operator-client-tls" }

// CozystackLabels are the operator's labels on cluster's cluster-level
// objects (Services, PodDisruptionBudget, EtcdMembers).
func CozystackLabels(cluster string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "etcd",
		"app.kubernetes.io/instance":   cluster,
		"app.kubernetes.io/managed-by": "etcd-operator",
		CozystackClusterLabel:          cluster,
	}
}

// cozystackMemberLabels are the labels of a member's objects (its PVC and
// pod; the pod adds the role).
func cozystackMemberLabels(cluster, member string) map[string]string {
	l := CozystackLabels(cluster)
	l["app.kubernetes.io/component"] = member
	return l
}

// IsCozystackMemberName reports whether pod is named as the operator
// names cluster's members: <cluster>- and the API server's 5 generated
// characters.
func IsCozystackMemberName(cluster, pod string) bool {
	suffix, ok := strings.CutPrefix(pod, cluster+"-")
	if !ok || len(suffix) != 5 {
		return false
	}
	for _, c := range suffix {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// CozystackMemberHost is a member's DNS name under the cluster's headless
// Service (the host of its advertised URLs).
func CozystackMemberHost(member, cluster, ns string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, cluster, ns)
}

// CozystackClientTLS is the TLS configuration of a client of cluster's
// members in ns, from the operator-client Secret.
func CozystackClientTLS(ctx context.Context, kc kubernetes.Interface, ns, cluster string) (*tls.Config, error) {
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, CozystackOperatorClientSecret(cluster), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cozystackTLS(s.Data["ca.crt"], s.Data["tls.crt"], s.Data["tls.key"])
}

func cozystackTLS(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in ca.crt")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func init() {
	register(&Scenario{
		Name:  "cozystack",
		Shape: CozystackOperator,
		Summary: "the cozystack etcd-operator's layout (EtcdCluster, EtcdMembers <name>-<random>, client mTLS): 3 healthy " +
			"members; the seed's pod still has --initial-cluster-state=new (v0.5.0-0.5.3 never re-template it) while " +
			"EtcdCluster.status.clusterID is set",
		Reasons: []model.ReasonCode{model.ReasonBootstrapFlagStale},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			c, err := formCozystack(ctx, env, s.Name)
			if err != nil {
				return err
			}
			return c.writeStatus(ctx, "")
		},
	})
	register(&Scenario{
		Name:  "cozystack-split",
		Shape: CozystackOperator,
		Summary: "the cozystack etcd-operator's seed 000: once the 3 members formed, the seed lost its data and restarted " +
			"with its pod's flags as v0.5.3 renders them (state new, its frozen self-only --initial-cluster): it formed " +
			"its own one-member cluster with another cluster ID (the process with another --initial-cluster-token: with " +
			"the same one etcd gives it the old IDs and it crash-loops instead); the EtcdCluster and EtcdMembers keep " +
			"the old IDs",
		Reasons: []model.ReasonCode{model.ReasonClusterIDSplit, model.ReasonBootstrapFlagStale},
		MayAlso: []model.ReasonCode{
			model.ReasonLeaderDisagreement, model.ReasonMemberListDisagreement, model.ReasonCRMemberMismatch,
			model.ReasonMemberUnreachable,
		},
		run: runCozystackSplit,
	})
	register(&Scenario{
		Name:  "cozystack-cr-stale",
		Shape: CozystackOperator,
		Summary: "the cozystack etcd-operator's cluster (every pod state existing, as v0.5.4+ renders them) with 2 of " +
			"its 3 members' etcd stopped (no quorum) while the EtcdCluster still says Available (QuorumHealthy) with 3 " +
			"ready members: the operator is not reconciling (cozystack/etcd-operator#367)",
		Reasons: []model.ReasonCode{model.ReasonQuorumUnavailable, model.ReasonCRStatusStale},
		MayAlso: []model.ReasonCode{
			model.ReasonMemberUnreachable, model.ReasonPodNotReady, model.ReasonLeaderMissing, model.ReasonLagUnknown,
			model.ReasonClientEndpointsMissing,
		},
		run: runCozystackCRStale,
	})
	register(&Scenario{
		Name:  "cozystack-member-stale",
		Shape: CozystackOperator,
		Summary: "the cozystack etcd-operator's cluster, 3 healthy members, every pod state existing (the seed's " +
			"recreated as v0.5.4+ renders it), but one non-seed EtcdMember's status.memberID is not the ID its member " +
			"answers with (the ID of an earlier incarnation)",
		Reasons: []model.ReasonCode{model.ReasonCRMemberMismatch},
		run:     runCozystackMemberStale,
	})
}

// cozyCluster is one cluster the scenario plays the operator for.
type cozyCluster struct {
	env      Env
	name, ns string
	uid      types.UID
	token    string
	ca       *pki.CA
	client   *tls.Config
	// ips are the members' sandbox addresses so far: the server
	// certificate names them (see ensureServerSecret).
	ips     []net.IP
	members []*cozyMember
	// clusterID is the ID the members formed.
	clusterID uint64
}

// cozyMember is one EtcdMember and its pod.
type cozyMember struct {
	name           string
	uid            types.UID
	seed           bool
	initialCluster string
	addr           string
	podUID         types.UID
	memberID       uint64
}

func (c *cozyCluster) logf(format string, args ...any) {
	c.env.Logf("scenario %s: "+format, append([]any{c.name}, args...)...)
}

func (c *cozyCluster) peerURL(member string) string {
	return "http://" + CozystackMemberHost(member, c.name, c.ns) + ":2380"
}

// formCozystack lays out an EtcdCluster of cozystackReplicas members the
// way the operator bootstraps and grows it, and returns once the members
// form one cluster of voters.
func formCozystack(ctx context.Context, env Env, name string) (*cozyCluster, error) {
	if env.Dynamic == nil {
		return nil, errors.New("the sandbox gives no dynamic client")
	}
	if err := EnsureCozystackCRDs(ctx, env.Dynamic); err != nil {
		return nil, err
	}
	c := &cozyCluster{env: env, name: name, ns: env.Namespace}
	if err := c.createCluster(ctx); err != nil {
		return nil, err
	}
	if err := c.createSecrets(ctx); err != nil {
		return nil, err
	}
	if err := c.createServices(ctx); err != nil {
		return nil, err
	}
	for i := range cozystackReplicas {
		if err := c.addMember(ctx, i == 0); err != nil {
			return nil, err
		}
	}
	if err := c.waitFormed(ctx, c.members); err != nil {
		return nil, err
	}
	return c, nil
}

// EnsureCozystackCRDs creates the operator's CRDs (minimal schemas:
// spec and status preserve unknown fields; the status subresource, and
// scale as the operator declares it) unless they exist, and waits until
// they are established.
func EnsureCozystackCRDs(ctx context.Context, dyn dynamic.Interface) error {
	for _, d := range []struct {
		kind, plural, statusReplicas string
		columns                      []any
	}{
		{CozystackClusterKind, "etcdclusters", ".status.readyMembers", []any{
			map[string]any{"name": "Version", "type": "string", "jsonPath": ".spec.version"},
			map[string]any{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
			map[string]any{"name": "Ready", "type": "integer", "jsonPath": ".status.readyMembers"},
			map[string]any{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
		}},
		{CozystackMemberKind, "etcdmembers", ".status.replicas", nil},
	} {
		open := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		version := map[string]any{
			"name": CozystackVersion, "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"spec": open, "status": open},
			}},
			"subresources": map[string]any{
				"status": map[string]any{},
				"scale": map[string]any{
					"specReplicasPath": ".spec.replicas", "statusReplicasPath": d.statusReplicas,
					"labelSelectorPath": ".status.selector",
				},
			},
		}
		if d.columns != nil {
			version["additionalPrinterColumns"] = d.columns
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "CustomResourceDefinition",
			"metadata":   map[string]any{"name": d.plural + "." + CozystackGroup},
			"spec": map[string]any{
				"group": CozystackGroup,
				"names": map[string]any{
					"kind": d.kind, "listKind": d.kind + "List", "plural": d.plural, "singular": strings.ToLower(d.kind),
				},
				"scope":    "Namespaced",
				"versions": []any{version},
			},
		}}
		if err := createCRD(ctx, dyn, crd); err != nil {
			return err
		}
	}
	return nil
}

// createCRD creates crd (one that exists already is kept) and waits
// until the API server has established it.
func createCRD(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) error {
	_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
	}
	for {
		cur, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err == nil && crdEstablished(cur) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.GetName(), ctx.Err())
		case <-time.After(poll):
		}
	}
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// createWithRetry creates obj through ri, retrying while the resource is
// not served yet (a CRD just established).
func createWithRetry(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	for {
		out, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil || !apierrors.IsNotFound(err) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func (c *cozyCluster) createCluster(ctx context.Context) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CozystackAPIVersion,
		"kind":       CozystackClusterKind,
		"metadata":   map[string]any{"name": c.name, "namespace": c.ns},
		"spec": map[string]any{
			"replicas": int64(cozystackReplicas),
			"version":  CozystackEtcdVersion,
			"storage":  map[string]any{"size": "1Gi"},
			"tls": map[string]any{"client": map[string]any{
				"serverSecretRef":         map[string]any{"name": CozystackServerSecret(c.name)},
				"operatorClientSecretRef": map[string]any{"name": CozystackOperatorClientSecret(c.name)},
			}},
		},
	}}
	out, err := createWithRetry(ctx, c.env.Dynamic.Resource(EtcdClusterGVR).Namespace(c.ns), obj)
	if err != nil {
		return fmt.Errorf("creating EtcdCluster %s: %w", c.name, err)
	}
	c.uid = out.GetUID()
	// deriveClusterToken: namespace, name and UID.
	c.token = fmt.Sprintf("%s-%s-%s", c.ns, c.name, c.uid)
	return nil
}

// owner is a controller reference to the EtcdCluster.
func (c *cozyCluster) owner() metav1.OwnerReference {
	return cozystackOwner(CozystackClusterKind, c.name, c.uid)
}

func cozystackOwner(kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: CozystackAPIVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

// createSecrets mints what cert-manager issues for the cluster: a CA,
// the server certificate (CN <name>-server, the operator's
// serverCertDNSNames and 127.0.0.1) and the operator's client
// certificate (CN <name>-operator-client), as kubernetes.io/tls Secrets
// with ca.crt.
func (c *cozyCluster) createSecrets(ctx context.Context) error {
	ca, err := pki.NewCA(c.name+"-ca", 10*kubeadmCertValidity)
	if err != nil {
		return err
	}
	c.ca = ca
	cert, key, err := ca.Issue(pki.Leaf{CN: c.name + "-operator-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, kubeadmCertValidity)
	if err != nil {
		return err
	}
	if c.client, err = cozystackTLS(ca.CertPEM, cert, key); err != nil {
		return err
	}
	sec := c.tlsSecret(CozystackOperatorClientSecret(c.name), c.name+"-operator-client", cert, key, nil, nil)
	if _, err := c.env.Kube.CoreV1().Secrets(c.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Secret %s: %w", sec.Name, err)
	}
	return c.ensureServerSecret(ctx)
}

func (c *cozyCluster) serverDNSNames() []string {
	wild := fmt.Sprintf("*.%s.%s.svc", c.name, c.ns)
	svc := fmt.Sprintf("%s.%s.svc", c.name, c.ns)
	clientSvc := fmt.Sprintf("%s-client.%s.svc", c.name, c.ns)
	const domain = ".cluster.local"
	return []string{wild, wild + domain, svc, svc + domain, clientSvc, clientSvc + domain, "localhost"}
}

// ensureServerSecret (re)issues the server certificate for the members
// so far and writes its Secret. Besides what the operator asks
// cert-manager for, it names each member's sandbox address: the runner
// rewrites the members' advertised URLs (<member>.<name>.<ns>.svc) to
// those addresses, so a client dialling a member's advertised URL dials
// its address. A member reads the Secret when its pod starts; each
// member's certificate therefore names at least its own address.
func (c *cozyCluster) ensureServerSecret(ctx context.Context) error {
	ips := append([]net.IP{net.IPv4(127, 0, 0, 1)}, c.ips...)
	cert, key, err := c.ca.Issue(pki.Leaf{
		CN:     c.name + "-server",
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNS:    c.serverDNSNames(), IPs: ips,
	}, kubeadmCertValidity)
	if err != nil {
		return err
	}
	sec := c.tlsSecret(CozystackServerSecret(c.name), c.name+"-server", cert, key, c.serverDNSNames(), ips)
	secrets := c.env.Kube.CoreV1().Secrets(c.ns)
	_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := secrets.Get(ctx, sec.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Data, cur.Annotations = sec.Data, sec.Annotations
			_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s: %w", sec.Name, err)
	}
	return nil
}

// tlsSecret is a Secret as cert-manager writes it for Certificate
// certName.
func (c *cozyCluster) tlsSecret(name, certName string, cert, key []byte, dns []string, ips []net.IP) *corev1.Secret {
	var ipStrs []string
	for _, ip := range ips {
		ipStrs = append(ipStrs, ip.String())
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.ns,
			Labels: map[string]string{"controller.cert-manager.io/fao": "true"},
			Annotations: map[string]string{
				"cert-manager.io/certificate-name": certName,
				"cert-manager.io/common-name":      certName,
				"cert-manager.io/alt-names":        strings.Join(dns, ","),
				"cert-manager.io/ip-sans":          strings.Join(ipStrs, ","),
				"cert-manager.io/uri-sans":         "",
				"cert-manager.io/issuer-name":      c.name + "-ca",
				"cert-manager.io/issuer-kind":      "Issuer",
				"cert-manager.io/issuer-group":     "cert-manager.io",
			},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": c.ca.CertPEM},
	}
}

// createServices creates the headless Service <name>, the client Service
// <name>-client and the PodDisruptionBudget <name> (minAvailable: a
// quorum of the voters).
func (c *cozyCluster) createServices(ctx context.Context) error {
	sel := map[string]string{CozystackClusterLabel: c.name}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: CozystackLabels(c.name), OwnerReferences: []metav1.OwnerReference{c.owner()}}
	}
	svcs := []*corev1.Service{
		{ObjectMeta: meta(c.name), Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: sel,
			Ports: []corev1.ServicePort{
				{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(2379)},
				{Name: "peer", Port: 2380, TargetPort: intstr.FromInt32(2380)},
			},
		}},
		{ObjectMeta: meta(c.name + "-client"), Spec: corev1.ServiceSpec{
			Selector: sel,
			Ports:    []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(2379)}},
		}},
	}
	for _, s := range svcs {
		if _, err := c.env.Kube.CoreV1().Services(c.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Service %s: %w", s.Name, err)
		}
	}
	minAvailable := intstr.FromInt32(cozystackReplicas/2 + 1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: meta(c.name), Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &minAvailable,
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{CozystackClusterLabel: c.name, CozystackRoleLabel: CozystackRoleVoter}},
	}}
	if _, err := c.env.Kube.PolicyV1().PodDisruptionBudgets(c.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PodDisruptionBudget %s: %w", pdb.Name, err)
	}
	return nil
}

// memberSpec is an EtcdMember's spec.
func (c *cozyCluster) memberSpec(seed bool, initialCluster string) map[string]any {
	spec := map[string]any{
		"clusterName":  c.name,
		"version":      CozystackEtcdVersion,
		"storage":      map[string]any{"size": "1Gi"},
		"clusterToken": c.token,
		"tls": map[string]any{
			"clientServerSecretRef": map[string]any{"name": CozystackServerSecret(c.name)},
			"clientMTLS":            true,
		},
		"initialCluster": initialCluster,
	}
	if seed {
		spec["bootstrap"] = true
	}
	return spec
}

// addMember does what the operator does for one member: the cluster
// controller creates the EtcdMember (GenerateName <name>-), for a
// scale-up adds it to etcd as a learner and records --initial-cluster
// (every member so far, itself included; the seed: itself only); the
// member controller creates its PVC and pod; the cluster controller
// promotes the learner once it has caught up.
func (c *cozyCluster) addMember(ctx context.Context, seed bool) error {
	ri := c.env.Dynamic.Resource(EtcdMemberGVR).Namespace(c.ns)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CozystackAPIVersion,
		"kind":       CozystackMemberKind,
		"metadata":   map[string]any{"generateName": c.name + "-", "namespace": c.ns},
		"spec":       c.memberSpec(seed, ""),
	}}
	obj.SetLabels(CozystackLabels(c.name))
	obj.SetOwnerReferences([]metav1.OwnerReference{c.owner()})
	out, err := createWithRetry(ctx, ri, obj)
	if err != nil {
		return fmt.Errorf("creating an EtcdMember: %w", err)
	}
	m := &cozyMember{name: out.GetName(), uid: out.GetUID(), seed: seed}
	if m.addr, err = c.env.Address(m.name); err != nil {
		return err
	}
	sandboxPeer := "http://" + net.JoinHostPort(m.addr, "2380")
	names := []string{m.name}
	if !seed {
		// The operator adds <member>.<name>.<ns>.svc; the runner
		// rewrites every member's flags to its address, so etcd's
		// members advertise that address and a learner must be added
		// with it (etcd compares the joining member's peer URLs with
		// the ones it was added with).
		cl, err := c.dial(c.members[0])
		if err != nil {
			return err
		}
		err = kubeadmAddLearner(ctx, cl, sandboxPeer)
		cl.Close()
		if err != nil {
			return fmt.Errorf("adding %s as a learner: %w", m.name, err)
		}
		for _, o := range c.members {
			names = append(names, o.name)
		}
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, n+"="+c.peerURL(n))
	}
	sort.Strings(parts)
	m.initialCluster = strings.Join(parts, ",")
	// completePendingMember: the initial cluster and the member's
	// component label, once its name is known.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, m.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Object["spec"] = c.memberSpec(seed, m.initialCluster)
		cur.SetLabels(cozystackMemberLabels(c.name, m.name))
		_, err = ri.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("recording EtcdMember %s's initial cluster: %w", m.name, err)
	}
	c.ips = append(c.ips, net.ParseIP(m.addr))
	if err := c.ensureServerSecret(ctx); err != nil {
		return err
	}
	if err := c.createPVC(ctx, m); err != nil {
		return err
	}
	state := "existing"
	if seed {
		state = "new"
	}
	if err := c.createPod(ctx, m, state); err != nil {
		return err
	}
	c.members = append(c.members, m)
	if !seed {
		cl, err := c.dial(c.members[0])
		if err != nil {
			return err
		}
		err = kubeadmPromote(ctx, cl, sandboxPeer)
		cl.Close()
		if err != nil {
			return fmt.Errorf("promoting %s: %w", m.name, err)
		}
		c.logf("added %s as a learner, started it existing and promoted it", m.name)
	} else {
		c.logf("started seed %s new, with itself only", m.name)
	}
	return waitPodIn(ctx, c.env, c.ns, m.name, "Ready", PodReady)
}

func (c *cozyCluster) createPVC(ctx context.Context, m *cozyMember) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "data-" + m.name, Namespace: c.ns, Labels: cozystackMemberLabels(c.name, m.name),
			OwnerReferences: []metav1.OwnerReference{cozystackOwner(CozystackMemberKind, m.name, m.uid)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.env.Kube.CoreV1().PersistentVolumeClaims(c.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PVC %s: %w", pvc.Name, err)
	}
	return nil
}

func (c *cozyCluster) createPod(ctx context.Context, m *cozyMember, state string) error {
	p := CozystackMemberPod(c.ns, c.name, m.name, m.uid, m.initialCluster, c.token, state)
	out, err := c.env.Kube.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", p.Name, err)
	}
	m.podUID = out.UID
	return nil
}

// CozystackMemberPod is the pod the operator's member controller renders
// for member (uid memberUID) of cluster in ns (buildPod in
// controllers/etcdmember_controller.go, client TLS with mTLS, plaintext
// peers, PVC storage), with --initial-cluster-state state.
func CozystackMemberPod(ns, cluster, member string, memberUID types.UID, initialCluster, token, state string) *corev1.Pod {
	yes, no := true, false
	user := int64(cozystackUser)
	labels := cozystackMemberLabels(cluster, member)
	labels[CozystackRoleLabel] = CozystackRoleVoter
	host := CozystackMemberHost(member, cluster, ns)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: member, Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{cozystackOwner(CozystackMemberKind, member, memberUID)},
		},
		Spec: corev1.PodSpec{
			Hostname:                     member,
			Subdomain:                    cluster,
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &user, RunAsGroup: &user, FSGroup: &user,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "etcd",
				Image: CozystackEtcdImage,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Command: []string{
					"etcd",
					"--name=" + member,
					"--data-dir=/var/lib/etcd",
					"--listen-peer-urls=http://0.0.0.0:2380",
					"--listen-client-urls=https://0.0.0.0:2379",
					"--advertise-client-urls=https://" + host + ":2379",
					"--initial-advertise-peer-urls=http://" + host + ":2380",
					"--initial-cluster=" + initialCluster,
					"--initial-cluster-token=" + token,
					"--initial-cluster-state=" + state,
					"--listen-metrics-urls=http://0.0.0.0:2381",
					"--cert-file=/etc/etcd/tls/client/tls.crt",
					"--key-file=/etc/etcd/tls/client/tls.key",
					"--client-cert-auth=true",
					"--trusted-ca-file=/etc/etcd/tls/client/ca.crt",
				},
				Ports: []corev1.ContainerPort{
					{Name: "client", ContainerPort: 2379},
					{Name: "peer", ContainerPort: 2380},
					{Name: "metrics", ContainerPort: 2381},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/var/lib/etcd"},
					{Name: "tls-client", MountPath: "/etc/etcd/tls/client", ReadOnly: true},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2380)}},
					InitialDelaySeconds: 15, PeriodSeconds: 10, FailureThreshold: 3,
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2381)}},
					InitialDelaySeconds: 5, PeriodSeconds: 5, FailureThreshold: 3,
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + member}}},
				{Name: "tls-client", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: CozystackServerSecret(cluster)}}},
			},
		},
	}
}

// dial is a client of exactly member m (its advertised client URL is
// its sandbox address), with the operator's client certificate.
func (c *cozyCluster) dial(m *cozyMember) (*clientv3.Client, error) {
	return kubeadmClient([]string{"https://" + net.JoinHostPort(m.addr, "2379")}, c.client)
}

// status asks member m for its status.
func (c *cozyCluster) status(ctx context.Context, m *cozyMember) (*clientv3.StatusResponse, error) {
	cl, err := c.dial(m)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return cl.Status(sctx, cl.Endpoints()[0])
}

// waitFormed waits until members form one cluster of len(members)
// voters, and records the cluster's and each member's ID.
func (c *cozyCluster) waitFormed(ctx context.Context, members []*cozyMember) error {
	var urls []string
	for _, m := range members {
		urls = append(urls, "https://"+net.JoinHostPort(m.addr, "2379"))
	}
	for {
		err := kubeadmCheck(ctx, urls, c.client)
		if err == nil {
			for _, m := range members {
				st, err := c.status(ctx, m)
				if err != nil {
					return err
				}
				m.memberID, c.clusterID = st.Header.MemberId, st.Header.ClusterId
			}
			c.logf("%d members formed cluster %016x", len(members), c.clusterID)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for one %d-member cluster: %w", len(members), errors.Join(err, ctx.Err()))
		case <-time.After(poll):
		}
	}
}

func condition(typ, status, reason, message string, gen int64) map[string]any {
	return map[string]any{
		"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": gen,
	}
}

// writeStatus writes what the operator's controllers record once the
// cluster formed: each EtcdMember's status (its member ID, pod, PVC,
// voter, Joined and Ready) and the EtcdCluster's (3 ready members, the
// cluster ID and token, the observed spec, Available). staleMember, when
// set, is the member whose recorded member ID is not the one it has.
func (c *cozyCluster) writeStatus(ctx context.Context, staleMember string) error {
	for _, m := range c.members {
		id := m.memberID
		if m.name == staleMember {
			id = wrongMemberID(id, c.members)
		}
		err := updateStatus(ctx, c.env.Dynamic.Resource(EtcdMemberGVR).Namespace(c.ns), m.name, func(cur *unstructured.Unstructured) map[string]any {
			gen := cur.GetGeneration()
			return map[string]any{
				"memberID": fmt.Sprintf("%016x", id),
				"podName":  m.name,
				"podUID":   string(m.podUID),
				"isVoter":  true,
				"pvcName":  "data-" + m.name,
				"version":  CozystackEtcdVersion,
				"conditions": []any{
					condition("Joined", "True", "MemberAdded", "member is in the etcd member list", gen),
					condition("Ready", "True", "PodReady", "etcd member is ready", gen),
				},
			}
		})
		if err != nil {
			return fmt.Errorf("EtcdMember %s: %w", m.name, err)
		}
	}
	err := updateStatus(ctx, c.env.Dynamic.Resource(EtcdClusterGVR).Namespace(c.ns), c.name, func(cur *unstructured.Unstructured) map[string]any {
		gen := cur.GetGeneration()
		return map[string]any{
			"readyMembers":       int64(len(c.members)),
			"clusterID":          fmt.Sprintf("%016x", c.clusterID),
			"clusterToken":       c.token,
			"selector":           CozystackClusterLabel + "=" + c.name,
			"observedGeneration": gen,
			"observed": map[string]any{
				"replicas": int64(cozystackReplicas),
				"version":  CozystackEtcdVersion,
				"storage":  map[string]any{"size": "1Gi"},
			},
			"conditions": []any{
				condition("Available", "True", "QuorumHealthy", "All members are ready", gen),
				condition("Progressing", "False", "Reconciled", "actual state matches status.observed", gen),
				condition("Degraded", "False", "QuorumHealthy", "", gen),
			},
		}
	})
	if err != nil {
		return fmt.Errorf("EtcdCluster %s: %w", c.name, err)
	}
	return nil
}

// wrongMemberID is an ID none of members has, derived from id.
func wrongMemberID(id uint64, members []*cozyMember) uint64 {
	for w := id ^ 0x5a5a5a5a5a5a5a5a; ; w++ {
		taken := w == 0
		for _, m := range members {
			taken = taken || m.memberID == w
		}
		if !taken {
			return w
		}
	}
}

// updateStatus sets the status of object name to status(the object).
func updateStatus(ctx context.Context, ri dynamic.ResourceInterface, name string, status func(cur *unstructured.Unstructured) map[string]any) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Object["status"] = status(cur)
		_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// recreatePod deletes member m's pod, waits until it is gone, creates it
// again as the member controller renders it with state (its PVC stays),
// waits until it is Ready and records its UID in the EtcdMember's status.
func (c *cozyCluster) recreatePod(ctx context.Context, m *cozyMember, state string) error {
	pods := c.env.Kube.CoreV1().Pods(c.ns)
	if err := pods.Delete(ctx, m.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		if _, err := pods.Get(ctx, m.name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pod %s to go: %w", m.name, ctx.Err())
		case <-time.After(poll):
		}
	}
	if err := c.createPod(ctx, m, state); err != nil {
		return err
	}
	if err := waitPodIn(ctx, c.env, c.ns, m.name, "Ready", PodReady); err != nil {
		return err
	}
	return updateStatus(ctx, c.env.Dynamic.Resource(EtcdMemberGVR).Namespace(c.ns), m.name, func(cur *unstructured.Unstructured) map[string]any {
		st, ok := cur.Object["status"].(map[string]any)
		if !ok {
			st = map[string]any{}
		}
		st["podUID"] = string(m.podUID)
		return st
	})
}

func runCozystackSplit(ctx context.Context, env Env, s *Scenario) error {
	c, err := formCozystack(ctx, env, s.Name)
	if err != nil {
		return err
	}
	if err := c.writeStatus(ctx, ""); err != nil {
		return err
	}
	seed := c.members[0]
	// etcd derives a cluster's ID from its members' IDs, and a member's
	// from its peer URLs and the token: a seed that bootstrapped with
	// itself only and comes back on an empty volume with the same flags
	// gets the same member and cluster ID as before, and the old
	// leader's first heartbeat panics it (raft: tocommit out of range):
	// a crash loop, not a split. The re-bootstrapped process is
	// therefore given another --initial-cluster-token (its pod's flags
	// stay as v0.5.3 renders them), so it forms a one-member cluster of
	// its own, as the operator's buildPod comment describes the hazard.
	token := "--initial-cluster-token=" + c.token + "-rebootstrapped"
	c.logf("the seed %s loses its data and re-bootstraps with its pod's flags (state new, itself only)", seed.name)
	if err := env.Break(ctx, seed.name, fault.Rebootstrap, []string{token}); err != nil {
		return err
	}
	for {
		st, err := c.status(ctx, seed)
		if err == nil && st.Header.ClusterId != c.clusterID {
			c.logf("%s now has cluster ID %016x (the others and the EtcdCluster: %016x), member ID %016x", seed.name, st.Header.ClusterId, c.clusterID, st.Header.MemberId)
			return waitPodIn(ctx, env, c.ns, seed.name, "Ready", PodReady)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to form its own cluster (%v): %w", seed.name, err, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func runCozystackCRStale(ctx context.Context, env Env, s *Scenario) error {
	c, err := formCozystack(ctx, env, s.Name)
	if err != nil {
		return err
	}
	// #367 is not v0.5.3's: the seed's pod is rendered existing, so that
	// nothing but the stale status and the lost quorum shows.
	if err := c.recreatePod(ctx, c.members[0], "existing"); err != nil {
		return err
	}
	if err := c.waitFormed(ctx, c.members); err != nil {
		return err
	}
	if err := c.writeStatus(ctx, ""); err != nil {
		return err
	}
	for _, m := range c.members[1:] {
		if err := env.Break(ctx, m.name, fault.Stop, nil); err != nil {
			return err
		}
	}
	c.logf("stopped the etcd of %s and %s; the EtcdCluster still says Available", c.members[1].name, c.members[2].name)
	// The survivor can no longer commit anything: a linearizable read
	// fails.
	seed := c.members[0]
	for {
		cl, err := c.dial(seed)
		if err != nil {
			return err
		}
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = cl.Get(gctx, "/quorum-check")
		cancel()
		cl.Close()
		if err != nil {
			c.logf("%s cannot serve a linearizable read: %v", seed.name, err)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to lose quorum: %w", seed.name, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func runCozystackMemberStale(ctx context.Context, env Env, s *Scenario) error {
	c, err := formCozystack(ctx, env, s.Name)
	if err != nil {
		return err
	}
	seed := c.members[0]
	c.logf("recreating the seed %s's pod as v0.5.4+ renders it (state existing)", seed.name)
	if err := c.recreatePod(ctx, seed, "existing"); err != nil {
		return err
	}
	if err := c.waitFormed(ctx, c.members); err != nil {
		return err
	}
	stale := c.members[1]
	if err := c.writeStatus(ctx, stale.name); err != nil {
		return err
	}
	c.logf("EtcdMember %s records a member ID other than its member's %016x", stale.name, stale.memberID)
	return nil
}
