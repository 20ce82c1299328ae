package scenario

import (
	"bytes"
	"embed"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Shape is a bootstrap shape: how a member's pod template decides whether
// it bootstraps a new cluster or joins an existing one.
type Shape int

// The shapes the sandbox ships as templates.
const (
	// StaticExisting runs etcd directly; --initial-cluster-state is
	// "existing" once the cluster has formed.
	StaticExisting Shape = iota + 1
	// SelfRegistering runs a Bitnami-style entrypoint that removes and
	// re-adds its own member on an empty data dir.
	SelfRegistering
	// StaticNew runs etcd directly with --initial-cluster-state=new
	// hard-coded (the seed 000 hazard).
	StaticNew
	// Patroni runs PostgreSQL under Patroni with Patroni's Kubernetes
	// DCS (ConfigMaps): Patroni bootstraps the first member to take the
	// leader lock and every other one from it (pg_basebackup).
	Patroni
	// KubeadmStacked is kubeadm's stacked etcd: one static pod per
	// control-plane node (mirror pods etcd-<node> in kube-system), the
	// first node's started "new" with itself only, each later one added
	// as a learner, started "existing" and promoted. It has no template
	// (see kubeadm.go) and is not in Shapes.
	KubeadmStacked
	// CozystackOperator is the cozystack etcd-operator's (v1alpha2,
	// v0.5.x) layout: an EtcdCluster, one EtcdMember per member (named
	// <cluster>-<random>) controlling its pod and PVC, the seed started
	// "new" with itself only, each later member added as a learner,
	// started "existing" and promoted. It has no template (see
	// cozystack.go) and is not in Shapes.
	CozystackOperator
	// DruidOperator is etcd-druid's (v1alpha1, v0.37) layout: an Etcd, a
	// StatefulSet <name> of Parallel pods running the etcd-wrapper and
	// backup-restore containers around etcd (configured by the
	// ConfigMap <name>-config), member and snapshot Leases. It has no
	// template (see druid.go) and is not in Shapes.
	DruidOperator
	// ZalandoOperator is the Zalando postgres-operator's (v2.0) layout:
	// a postgresql resource and the StatefulSet <name> of Spilo pods
	// (Patroni with its Kubernetes DCS, on ConfigMaps or Endpoints), its
	// Services, Secrets and PodDisruptionBudgets. It has no template
	// (see zalando.go) and is not in Shapes.
	ZalandoOperator
	// PGOOperator is Crunchy PGO v5's layout: a PostgresCluster and one
	// StatefulSet of one pod per instance (<cluster>-instance1-<4
	// random>), Patroni with its Kubernetes DCS on Endpoints and its
	// REST API over HTTPS, its Services, Secrets, ConfigMaps and
	// PodDisruptionBudget. It has no template (see pgo.go) and is not in
	// Shapes.
	PGOOperator
	// CNPGOperator is CloudNativePG's layout: a Cluster controlling its
	// instance pods <cluster>-<serial> and their PVCs directly (no
	// StatefulSet), run by a stand-in for cnpg's instance manager around
	// real PostgreSQL; its Services, Secrets and PodDisruptionBudgets. It
	// has no template (see cnpg.go) and is not in Shapes.
	CNPGOperator
)

var shapeNames = map[Shape]string{
	StaticExisting:    "static-existing",
	SelfRegistering:   "self-registering",
	StaticNew:         "static-new",
	Patroni:           "patroni",
	KubeadmStacked:    "kubeadm-stacked",
	CozystackOperator: "cozystack-operator",
	DruidOperator:     "druid-operator",
	ZalandoOperator:   "zalando-operator",
	PGOOperator:       "pgo-operator",
	CNPGOperator:      "cnpg-operator",
}

// shapeTemplates are the templates each shape renders (default: its own
// and common.yaml, the etcd clusters' Services and PDB).
var shapeTemplates = map[Shape][]string{
	Patroni: {"patroni.yaml"},
}

func (s Shape) String() string {
	if n, ok := shapeNames[s]; ok {
		return n
	}
	return fmt.Sprintf("scenario.Shape(%d)", int(s))
}

// Shapes lists every shape.
func Shapes() []Shape { return []Shape{StaticExisting, SelfRegistering, StaticNew, Patroni} }

// DefaultImage is the image the templates name. The runner never pulls it:
// it runs the pinned etcd from the sandbox's bin dir.
const DefaultImage = "gcr.io/etcd-development/etcd:v3.6.16"

// PatroniImage is the image the Patroni template names (Patroni and
// PostgreSQL 15). The runner never pulls it: it runs the host's
// /usr/bin/patroni and PostgreSQL (Debian's patroni and postgresql-15).
const PatroniImage = "ghcr.io/zalando/spilo-15:3.0-p1"

// Params fill a template.
type Params struct {
	Name, Namespace string
	// Replicas is the StatefulSet's replica count; Members is how many
	// members --initial-cluster names (default Replicas).
	Replicas, Members int
	// State is --initial-cluster-state for StaticExisting ("new" while the
	// cluster forms, then "existing"); the other shapes ignore it.
	State string
	// Token is --initial-cluster-token (default the cluster's name).
	Token string
	// QuotaBackendBytes is --quota-backend-bytes (default 64 MiB).
	QuotaBackendBytes int64
	Image             string
	// Node, when set, pins every member to that node (nodeSelector).
	Node string
	// AntiAffinity is "required", "preferred", "spread-voters" or ""
	// (none). "spread-voters" spreads ordinals 0..Voters-1 one per node
	// (a topology spread constraint on the StatefulSet's pod-index label)
	// and places further ordinals, such as a learner, anywhere: a rolling
	// update then cannot put two voters on one node.
	AntiAffinity string
	// Voters is how many ordinals, from 0, "spread-voters" spreads.
	Voters int
	// PDB includes a PodDisruptionBudget (maxUnavailable: 1).
	PDB bool
	// ExtraArgs are further etcd flags (static-existing only), as a
	// chart's extraArgs value would add them.
	ExtraArgs []string

	// Patroni only.
	//
	// RunAsUser and RunAsGroup are the pod's securityContext (PostgreSQL
	// refuses to run as root): the host's postgres user, see PostgresUser.
	RunAsUser, RunAsGroup int64
	// PGBinDir holds PostgreSQL's binaries (PATRONI_POSTGRESQL_BIN_DIR).
	PGBinDir string
	// KubeContext is PATRONI_KUBERNETES_CONTEXT: the context of the
	// kubeconfig the runner gives the pods.
	KubeContext string
	// SynchronousMode is bootstrap.dcs synchronous_mode.
	SynchronousMode bool
	// NoRewind turns use_pg_rewind off.
	NoRewind bool
	// RESTAuth puts basic auth on the REST API's unsafe methods
	// (restapi.authentication, from the Secret <name>-rest-auth, which
	// the StatefulSet names with hactl.dev/rest-auth-secret).
	RESTAuth bool

	// Self-registering only.
	//
	// BitnamiAuth lays the cluster out as Bitnami's etcd chart does with
	// its default authentication (auth.rbac.create: true): the chart's
	// labels only (nothing of hactl's), the client Service named <name>,
	// the Secret <name> (BitnamiPasswordKey: RootPassword) read by the
	// container as ETCD_ROOT_PASSWORD (secretKeyRef) beside
	// ALLOW_NONE_AUTHENTICATION=no, and every etcdctl call of the
	// entrypoint and the readiness probe made as the root user.
	BitnamiAuth bool
	// RootPassword is the root user's password (BitnamiAuth).
	RootPassword string
	// ClientTLS, with BitnamiAuth, adds the chart's client TLS with
	// client-certificate authentication (auth.client.secureTransport and
	// enableAuthentication, existingSecret <name>-client-certs,
	// certFilename cert.pem, certKeyFilename key.pem, caFilename empty):
	// the Secret BitnamiCertsSecret holding these files, mounted as the
	// volume etcd-client-certs at BitnamiCertsDir, the ETCD_CERT_FILE,
	// ETCD_KEY_FILE, ETCD_CLIENT_CERT_AUTH and ETCD_TRUSTED_CA_FILE the
	// chart sets, https client URLs, and every etcdctl call (the
	// entrypoint's, the readiness probe's) dialling with those files.
	ClientTLS *BitnamiCerts
}

// BitnamiCerts are the PEM files of the Secret auth.client.existingSecret:
// the members' own key pair (serving, and the client certificate of the
// chart's own etcdctl) and their CA.
type BitnamiCerts struct {
	Cert, Key, CA []byte
}

// Objects are a rendered cluster.
type Objects struct {
	StatefulSet *appsv1.StatefulSet
	Services    []*corev1.Service
	PDB         *policyv1.PodDisruptionBudget
	// Patroni's: its ServiceAccount with a Role for the DCS, the
	// credentials' Secret and the configuration's ConfigMap.
	ServiceAccounts []*corev1.ServiceAccount
	Roles           []*rbacv1.Role
	RoleBindings    []*rbacv1.RoleBinding
	Secrets         []*corev1.Secret
	ConfigMaps      []*corev1.ConfigMap
}

// RESTUser and RESTPassword are the basic auth of a Patroni cluster with
// Params.RESTAuth (a sandbox's, on loopback: not a secret worth keeping).
// The scenarios send them with their own unsafe requests; Patroni
// without restapi.authentication ignores them.
const (
	RESTUser     = "hactl-sandbox"
	RESTPassword = "sandbox-rest-password"
)

//go:embed templates/*.yaml
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"initialCluster":      func(p Params) string { return initialCluster(p, true) },
	"initialClusterShort": func(p Params) string { return initialCluster(p, false) },
	"clientEndpoints":     clientEndpoints,
	"labels":              labels,
	"patroniLabels":       patroniLabels,
	"voterOrdinals":       voterOrdinals,
	"restUser":            func() string { return RESTUser },
	"restPassword":        func() string { return RESTPassword },
	"b64":                 func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) },
	"bitnamiPasswordKey":  func() string { return BitnamiPasswordKey },
	"bitnamiCertsSecret":  func(p Params) string { return BitnamiCertsSecret(p.Name) },
	"bitnamiCertsDir":     func() string { return BitnamiCertsDir },
	"bitnamiCertFile":     func() string { return BitnamiCertFile },
	"bitnamiKeyFile":      func() string { return BitnamiKeyFile },
	"bitnamiCAFile":       func() string { return BitnamiCAFile },
	"clientScheme":        clientScheme,
}).ParseFS(templateFS, "templates/*.yaml"))

func voterOrdinals(p Params) string {
	q := make([]string, p.Voters)
	for i := range q {
		q[i] = strconv.Quote(strconv.Itoa(i))
	}
	return strings.Join(q, ", ")
}

// MemberName is the pod (and etcd member) name of ordinal i.
func MemberName(cluster string, i int) string { return fmt.Sprintf("%s-%d", cluster, i) }

func initialCluster(p Params, fqdn bool) string {
	var parts []string
	for i := range p.Members {
		m := MemberName(p.Name, i)
		host := m + "." + p.Name + "-headless"
		if fqdn {
			host += "." + p.Namespace + ".svc.cluster.local"
		}
		parts = append(parts, m+"=http://"+host+":2380")
	}
	return strings.Join(parts, ",")
}

// labels renders the labels every object of a cluster carries, indented
// by n spaces, each on its own line.
func labels(p Params, n int) string {
	pad := "\n" + strings.Repeat(" ", n)
	l := pad + "app.kubernetes.io/name: etcd" +
		pad + "app.kubernetes.io/instance: " + p.Name
	if p.BitnamiAuth {
		// The chart's: Helm's managed-by; hactl finds the cluster by its
		// entrypoint's ETCD_ON_K8S.
		return l + pad + "app.kubernetes.io/managed-by: Helm"
	}
	return l + pad + "hactl.dev/engine: etcd"
}

// patroniLabels renders the labels of a Patroni cluster's objects (as
// Patroni's kubernetes.labels plus its scope label), indented by n.
func patroniLabels(p Params, n int) string {
	pad := "\n" + strings.Repeat(" ", n)
	return pad + "application: patroni" + pad + "cluster-name: " + p.Name
}

func clientEndpoints(p Params) string {
	var parts []string
	for i := range p.Members {
		m := MemberName(p.Name, i)
		parts = append(parts, clientScheme(p)+"://"+m+"."+p.Name+"-headless."+p.Namespace+".svc.cluster.local:2379")
	}
	return strings.Join(parts, ",")
}

// clientScheme is the scheme of the members' client URLs (the chart's
// etcd.clientProtocol): https with ClientTLS.
func clientScheme(p Params) string {
	if p.ClientTLS != nil {
		return "https"
	}
	return "http"
}

func (p Params) withDefaults() Params {
	if p.Members == 0 {
		p.Members = p.Replicas
	}
	if p.State == "" {
		p.State = "existing"
	}
	if p.Token == "" {
		p.Token = p.Name
	}
	if p.QuotaBackendBytes == 0 {
		p.QuotaBackendBytes = 64 << 20
	}
	if p.Image == "" {
		p.Image = DefaultImage
	}
	return p
}

// Render fills the shape's template and the shared Services and PDB.
func Render(shape Shape, p Params) (*Objects, error) {
	if p.Name == "" || p.Namespace == "" || p.Replicas < 1 {
		return nil, fmt.Errorf("render %s: name, namespace and replicas are required", shape)
	}
	p = p.withDefaults()
	name, ok := shapeNames[shape]
	if !ok {
		return nil, fmt.Errorf("render: unknown shape %v", shape)
	}
	if shape == Patroni {
		if p.Image == DefaultImage {
			p.Image = PatroniImage
		}
		if p.RunAsUser == 0 || p.PGBinDir == "" || p.KubeContext == "" {
			return nil, fmt.Errorf("render %s: runAsUser (non-root), PostgreSQL's bin dir and the kube context are required", name)
		}
	}
	if p.BitnamiAuth && (shape != SelfRegistering || p.RootPassword == "") {
		return nil, fmt.Errorf("render %s: Bitnami's authentication needs the self-registering shape and a root password", name)
	}
	if c := p.ClientTLS; c != nil && (!p.BitnamiAuth || len(c.Cert) == 0 || len(c.Key) == 0 || len(c.CA) == 0) {
		return nil, fmt.Errorf("render %s: Bitnami's client TLS needs BitnamiAuth and a certificate, key and CA", name)
	}
	files := shapeTemplates[shape]
	if files == nil {
		files = []string{name + ".yaml", "common.yaml"}
	}
	var buf bytes.Buffer
	for _, t := range files {
		if err := templates.ExecuteTemplate(&buf, t, p); err != nil {
			return nil, fmt.Errorf("render %s: %w", t, err)
		}
		buf.WriteString("\n---\n")
	}
	out := &Objects{}
	for _, doc := range strings.Split(buf.String(), "\n---\n") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("render %s: %w\n%s", name, err, doc)
		}
		var err error
		switch meta.Kind {
		case "StatefulSet":
			out.StatefulSet = &appsv1.StatefulSet{}
			err = yaml.UnmarshalStrict([]byte(doc), out.StatefulSet)
		case "Service":
			s := &corev1.Service{}
			err = yaml.UnmarshalStrict([]byte(doc), s)
			out.Services = append(out.Services, s)
		case "PodDisruptionBudget":
			out.PDB = &policyv1.PodDisruptionBudget{}
			err = yaml.UnmarshalStrict([]byte(doc), out.PDB)
		case "ServiceAccount":
			o := &corev1.ServiceAccount{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			out.ServiceAccounts = append(out.ServiceAccounts, o)
		case "Role":
			o := &rbacv1.Role{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			out.Roles = append(out.Roles, o)
		case "RoleBinding":
			o := &rbacv1.RoleBinding{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			out.RoleBindings = append(out.RoleBindings, o)
		case "Secret":
			o := &corev1.Secret{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			out.Secrets = append(out.Secrets, o)
		case "ConfigMap":
			o := &corev1.ConfigMap{}
			err = yaml.UnmarshalStrict([]byte(doc), o)
			out.ConfigMaps = append(out.ConfigMaps, o)
		default:
			err = fmt.Errorf("unexpected kind %q", meta.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		}
	}
	if out.StatefulSet == nil {
		return nil, fmt.Errorf("render %s: no StatefulSet", name)
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
