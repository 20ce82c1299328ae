package scenario

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/internal/pki"
)

// Crunchy PGO v5 (github.com/CrunchyData/postgres-operator) cannot run
// here, so the pgo scenarios play it: they install its PostgresCluster
// CRD and create a PostgresCluster, then every object its
// PostgresCluster controller creates for one instance set of 3 replicas,
// through the API and as the controller renders them (read from
// internal/naming/{names,labels,dns,selectors}.go;
// internal/patroni/{config,reconcile,certificates,rbac}.go;
// internal/postgres/{config,reconcile,parameters,hba}.go;
// internal/controller/postgrescluster/{instance,cluster,patroni,pki,rbac,
// postgres,pod_disruption_budget,topology,util}.go; internal/pki), and
// finally its status once the cluster runs. The StatefulSets are the
// real controller-manager's; the runner plays the kubelet for their pods
// and runs their database container's own command (sh, then the host's
// Patroni with the host's PostgreSQL on PATH). Nothing carries a label or
// annotation of hactl's. What differs from PGO is listed in
// docs/sandbox.md ("Crunchy PGO v5").
const (
	PGOGroup      = "postgres-operator.crunchydata.com"
	PGOVersion    = "v1beta1"
	PGOAPIVersion = PGOGroup + "/" + PGOVersion
	PGOKind       = "PostgresCluster"

	// PGO's labels (internal/naming/labels.go) and the values Patroni
	// 3.0.2 sets on the role label (RolePatroniLeader, RolePatroniReplica).
	PGOClusterLabel     = PGOGroup + "/cluster"
	PGOInstanceSetLabel = PGOGroup + "/instance-set"
	PGOInstanceLabel    = PGOGroup + "/instance"
	PGOPatroniLabel     = PGOGroup + "/patroni"
	PGORoleLabel        = PGOGroup + "/role"
	PGODataLabel        = PGOGroup + "/data"
	PGODataPostgres     = "postgres"
	PGOMaster           = "master"
	PGOReplica          = "replica"

	// PGOInstanceSet is the one instance set's name; PGOInstances its
	// replicas.
	PGOInstanceSet = "instance1"
	PGOInstances   = 3
	// PGORootSecret is the namespace's root CA (naming.RootCertSecret),
	// with the keys reconcileRootCertificate writes.
	PGORootSecret   = "pgo-root-cacert"
	PGORootCertKey  = "root.crt"
	PGORootKeyKey   = "root.key"
	pgoRootCN       = "postgres-operator-ca"
	pgoRootValidity = 10 * 365 * 24 * time.Hour
	pgoLeafValidity = 365 * 24 * time.Hour
	// The instance Secret's keys (internal/patroni/certificates.go,
	// instanceCertificate's dns.crt and dns.key) and where the projected
	// volume puts the first two under /etc/patroni.
	PGOCARootsKey    = "patroni.ca-roots"
	PGOCertCombined  = "patroni.crt-combined"
	PGODNSCertKey    = "dns.crt"
	PGODNSKeyKey     = "dns.key"
	pgoCARootsPath   = "~postgres-operator/patroni.ca-roots"
	pgoCertKeyPath   = "~postgres-operator/patroni.crt+key"
	pgoConfigDir     = "/etc/patroni"
	pgoConfigFileKey = "patroni.yaml"
	// pgoDataMount is PGO's data volume mount; PGO's replication user.
	pgoDataMount       = "/pgdata"
	pgoReplicationUser = "_crunchyrepl"
	pgoImage           = "registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi9-15.14-2547"
	pgoPostgresPort    = 5432
	pgoPatroniPort     = 8008
	pgoClusterDomain   = "cluster.local."
)

// PostgresClusterGVR is PGO's PostgresCluster resource.
var PostgresClusterGVR = schema.GroupVersionResource{Group: PGOGroup, Version: PGOVersion, Resource: "postgresclusters"}

// PGO's names (internal/naming/names.go).
func PGOPodService(cluster string) string     { return cluster + "-pods" }
func PGOScope(cluster string) string          { return cluster + "-ha" }
func PGODCSService(cluster string) string     { return PGOScope(cluster) + "-config" }
func PGOPrimaryService(cluster string) string { return cluster + "-primary" }
func PGOReplicaService(cluster string) string { return cluster + "-replicas" }
func PGOClusterConfig(cluster string) string  { return cluster + "-config" }
func PGOInstanceRBAC(cluster string) string   { return cluster + "-instance" }
func PGOPDBName(cluster string) string        { return cluster + "-set-" + PGOInstanceSet }
func PGOInstanceConfig(inst string) string    { return inst + "-config" }
func PGOInstanceCerts(inst string) string     { return inst + "-certs" }
func PGODataVolume(inst string) string        { return inst + "-pgdata" }

// PGOPasswordSecret is the sandbox's own Secret with the passwords of the
// superuser and of PGO's replication user, which stand in for PGO's
// replication client certificate (docs/sandbox.md).
func PGOPasswordSecret(cluster string) string { return cluster + "-patroni-auth" }

// pgoAlphabet is the alphabet of PGO's rand.String (apimachinery's
// util/rand: no vowels, no 0, 1 or 3).
const pgoAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// PGOInstanceName is the name of instance i (0-based) of cluster's
// instance set: <cluster>-instance1-<4 characters of PGO's alphabet>, as
// naming.GenerateInstance draws them, but from an FNV hash of the
// cluster, the set and i (as naming.GenerateStartupInstance hashes the
// cluster and set) so that names are stable.
func PGOInstanceName(cluster string, i int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(cluster + PGOInstanceSet + strconv.Itoa(i)))
	v := h.Sum32()
	id := make([]byte, 4)
	for j := range id {
		id[j] = pgoAlphabet[v%uint32(len(pgoAlphabet))]
		v /= uint32(len(pgoAlphabet))
	}
	return cluster + "-" + PGOInstanceSet + "-" + string(id)
}

// PGOInstanceNames lists the cluster's instances (StatefulSets).
func PGOInstanceNames(cluster string) []string {
	out := make([]string, PGOInstances)
	for i := range out {
		out[i] = PGOInstanceName(cluster, i)
	}
	return out
}

// PGOPods lists the cluster's pods: <instance>-0 of each instance.
func PGOPods(cluster string) []string {
	out := PGOInstanceNames(cluster)
	for i := range out {
		out[i] += "-0"
	}
	return out
}

// IsPGOPodName reports whether pod is one of cluster's instance pods:
// <cluster>-instance1-<4 of PGO's alphabet>-0.
func IsPGOPodName(cluster, pod string) bool {
	rest, ok := strings.CutPrefix(pod, cluster+"-"+PGOInstanceSet+"-")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, "-0")
	if !ok || len(id) != 4 {
		return false
	}
	for _, c := range id {
		if !strings.ContainsRune(pgoAlphabet, c) {
			return false
		}
	}
	return true
}

// PGOPodDNSNames are naming.InstancePodDNSNames of instance in ns: the
// FQDN first (under the cluster domain PGO falls back to, with its root
// dot), the names the instance certificate carries.
func PGOPodDNSNames(cluster, ns, instance string) []string {
	name := instance + "-0." + PGOPodService(cluster)
	return []string{name + "." + ns + ".svc." + pgoClusterDomain, name + "." + ns + ".svc", name + "." + ns, name}
}

// PGOParams describe a cluster PGO lays out.
type PGOParams struct {
	Name, Namespace string
	// UID is the PostgresCluster's UID, for the owner references.
	UID types.UID
	// PGVersion is spec.postgresVersion.
	PGVersion int
	// MaximumLagOnFailover is spec.patroni.dynamicConfiguration's
	// maximum_lag_on_failover (0: unset).
	MaximumLagOnFailover int64
	// RunAsUser and RunAsGroup are the host's postgres user (PGO's image
	// runs as its own uid 26; PostgreSQL refuses root).
	RunAsUser, RunAsGroup int64
	// SuperPassword and ReplicationPassword are the sandbox's passwords.
	SuperPassword, ReplicationPassword string
	// MemberIPs are the sandbox's addresses of each instance's pod (by
	// instance), which its certificate names beside PGO's DNS names:
	// the runner makes each member advertise its REST API at that
	// address (there is no cluster DNS), and Patroni verifies the names
	// of the members it asks in a switchover or failover (a
	// sandbox-only deviation; PGO's members advertise their DNS names).
	MemberIPs map[string]string
}

// PGOLayout is every object PGO creates for a cluster (and the sandbox's
// password Secret).
type PGOLayout struct {
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
	ConfigMaps     []*corev1.ConfigMap
	Secrets        []*corev1.Secret
	// Services in creation order; LeaderService is <cluster>-ha, whose
	// ClusterIP the Endpoints of <cluster>-primary name.
	Services      []*corev1.Service
	LeaderService *corev1.Service
	PDB           *policyv1.PodDisruptionBudget
	PVCs          []*corev1.PersistentVolumeClaim
	StatefulSets  []*appsv1.StatefulSet
}

// PGOPostgresCluster is the PostgresCluster of p: PostgreSQL p.PGVersion,
// one instance set of 3 with a 1Gi data volume.
func PGOPostgresCluster(p PGOParams) *unstructured.Unstructured {
	spec := map[string]any{
		"postgresVersion": int64(p.PGVersion),
		"instances": []any{map[string]any{
			"name":     PGOInstanceSet,
			"replicas": int64(PGOInstances),
			"dataVolumeClaimSpec": map[string]any{
				"accessModes": []any{"ReadWriteOnce"},
				"resources":   map[string]any{"requests": map[string]any{"storage": "1Gi"}},
			},
		}},
	}
	if p.MaximumLagOnFailover != 0 {
		spec["patroni"] = map[string]any{"dynamicConfiguration": map[string]any{"maximum_lag_on_failover": p.MaximumLagOnFailover}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PGOAPIVersion,
		"kind":       PGOKind,
		"metadata":   map[string]any{"name": p.Name, "namespace": p.Namespace},
		"spec":       spec,
	}}
}

// pgoYAML renders a Patroni configuration file as PGO does: its warning
// header, then the YAML.
func pgoYAML(root map[string]any) string {
	b, _ := yaml.Marshal(root)
	return "# Generated by postgres-operator. DO NOT EDIT.\n# Your changes will not be saved.\n" + string(b)
}

// pgoClusterYAML is clusterYAML's patroni.yaml for p, with the sandbox's
// deviations: replication and rewind authenticate with a password (the
// environment's) rather than PGO's client certificate, the HBA rules use
// host for hostssl and scram-sha-256 for cert, and the DCS parameters are
// those of PGO's that do not need its TLS files or a socket directory
// (unix_socket_directories ”, since every member runs on this host).
func pgoClusterYAML(p PGOParams) string {
	ca := pgoConfigDir + "/" + pgoCARootsPath
	crt := pgoConfigDir + "/" + pgoCertKeyPath
	dcs := map[string]any{
		"ttl":       30,
		"loop_wait": 10,
		"postgresql": map[string]any{
			"use_slots":     false,
			"use_pg_rewind": p.PGVersion > 10,
			"parameters": map[string]any{
				"jit":                     "off",
				"password_encryption":     "scram-sha-256",
				"wal_level":               "logical",
				"unix_socket_directories": "",
			},
			"pg_hba": []string{
				`local all "postgres" peer`,
				`host replication "` + pgoReplicationUser + `" all scram-sha-256`,
				`host "postgres" "` + pgoReplicationUser + `" all scram-sha-256`,
				`host all "` + pgoReplicationUser + `" all reject`,
				`host all all all scram-sha-256`,
			},
		},
	}
	if p.MaximumLagOnFailover != 0 {
		dcs["maximum_lag_on_failover"] = p.MaximumLagOnFailover
	}
	return pgoYAML(map[string]any{
		"scope": PGOScope(p.Name),
		"kubernetes": map[string]any{
			"namespace":     p.Namespace,
			"role_label":    PGORoleLabel,
			"scope_label":   PGOPatroniLabel,
			"use_endpoints": true,
			// Patroni 3.0.2 knows neither (its leader value is master
			// anyway) and ignores them.
			"leader_label_value":         PGOMaster,
			"standby_leader_label_value": PGOMaster,
			"labels":                     map[string]string{PGOClusterLabel: p.Name},
		},
		"postgresql": map[string]any{
			"authentication": map[string]any{
				"replication": map[string]any{"username": pgoReplicationUser},
				"rewind":      map[string]any{"username": pgoReplicationUser},
			},
		},
		"restapi":   map[string]any{"cafile": ca, "certfile": crt, "keyfile": nil, "verify_client": "optional"},
		"ctl":       map[string]any{"cacert": ca, "certfile": crt, "keyfile": nil, "insecure": false},
		"watchdog":  map[string]any{"mode": "off"},
		"bootstrap": map[string]any{"dcs": dcs},
	})
}

// pgoInstanceYAML is instanceYAML's patroni.yaml (no pgBackRest).
func pgoInstanceYAML(p PGOParams) string {
	wal := fmt.Sprintf("%s/pg%d_wal", pgoDataMount, p.PGVersion)
	return pgoYAML(map[string]any{
		"kubernetes": map[string]any{},
		"restapi":    map[string]any{},
		"tags":       map[string]any{},
		"postgresql": map[string]any{
			"pgpass":                 "/tmp/.pgpass",
			"use_unix_socket":        true,
			"basebackup":             []string{"waldir=" + wal},
			"create_replica_methods": []string{"basebackup"},
		},
		"bootstrap": map[string]any{
			"method": "initdb",
			"initdb": []string{"allow-group-access", "data-checksums", "encoding=UTF8", "waldir=" + wal},
		},
	})
}

// PGOCA is the namespace's root CA (pgo-root-cacert).
type PGOCA = pki.CA

// NewPGOCA mints a root CA as pki.NewRootCertificateAuthority does
// (ECDSA P-256, CN postgres-operator-ca, ten years).
func NewPGOCA() (*PGOCA, error) { return pki.NewCA(pgoRootCN, pgoRootValidity) }

// ParsePGOCA reads a root CA back from pgo-root-cacert's data.
func ParsePGOCA(data map[string][]byte) (*PGOCA, error) {
	cb, _ := pem.Decode(data[PGORootCertKey])
	kb, _ := pem.Decode(data[PGORootKeyKey])
	if cb == nil || kb == nil {
		return nil, errors.New(PGORootSecret + ": no PEM certificate or key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &PGOCA{Cert: cert, Key: key, CertPEM: data[PGORootCertKey], KeyPEM: data[PGORootKeyKey]}, nil
}

// PGORootSecretObject is pgo-root-cacert holding ca.
func PGORootSecretObject(ns string, ca *PGOCA) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: PGORootSecret, Namespace: ns},
		Data:       map[string][]byte{PGORootCertKey: ca.CertPEM, PGORootKeyKey: ca.KeyPEM},
	}
}

// pgoOwner is the controller reference setControllerReference sets.
func pgoOwner(p PGOParams) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: PGOAPIVersion, Kind: PGOKind, Name: p.Name, UID: p.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}}
}

// PGOObjects lays out the cluster of p as PGO's controller creates it,
// its instance certificates signed by ca.
func PGOObjects(p PGOParams, ca *PGOCA) (*PGOLayout, error) {
	if p.Name == "" || p.Namespace == "" || p.PGVersion == 0 || p.RunAsUser == 0 || p.SuperPassword == "" || p.ReplicationPassword == "" || ca == nil {
		return nil, errors.New("pgo: name, namespace, PostgreSQL version, a non-root user, the passwords and a CA are required")
	}
	c, ns := p.Name, p.Namespace
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: pgoOwner(p)}
	}
	cl := func(extra ...string) map[string]string {
		l := map[string]string{PGOClusterLabel: c}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	out := &PGOLayout{}

	// reconcileInstanceRBAC with patroni.Permissions.
	out.ServiceAccount = &corev1.ServiceAccount{ObjectMeta: meta(PGOInstanceRBAC(c), cl())}
	yes := true
	out.ServiceAccount.AutomountServiceAccountToken = &yes
	out.Role = &rbacv1.Role{ObjectMeta: meta(PGOInstanceRBAC(c), cl()), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: []string{"create", "deletecollection", "get", "list", "patch", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "patch", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create"}},
	}}
	out.RoleBinding = &rbacv1.RoleBinding{
		ObjectMeta: meta(PGOInstanceRBAC(c), cl()),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: PGOInstanceRBAC(c)},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: PGOInstanceRBAC(c)}},
	}

	// reconcileClusterConfigMap.
	out.ConfigMaps = append(out.ConfigMaps, &corev1.ConfigMap{ObjectMeta: meta(PGOClusterConfig(c), cl()),
		Data: map[string]string{pgoConfigFileKey: pgoClusterYAML(p)}})

	// reconcileClusterPodService, reconcilePatroniDistributedConfiguration,
	// generatePatroniLeaderLeaseService, generateClusterPrimaryService,
	// generateClusterReplicaService.
	pgPort := func() []corev1.ServicePort {
		return []corev1.ServicePort{{Name: "postgres", Port: pgoPostgresPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("postgres")}}
	}
	pods := &corev1.Service{ObjectMeta: meta(PGOPodService(c), cl()), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: cl()}}
	dcs := &corev1.Service{ObjectMeta: meta(PGODCSService(c), cl(PGOPatroniLabel, PGOScope(c))), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone}}
	leader := &corev1.Service{ObjectMeta: meta(PGOScope(c), cl(PGOPatroniLabel, PGOScope(c))), Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, Ports: pgPort()}}
	primary := &corev1.Service{ObjectMeta: meta(PGOPrimaryService(c), cl(PGORoleLabel, "primary")), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Ports: pgPort()}}
	replicas := &corev1.Service{ObjectMeta: meta(PGOReplicaService(c), cl(PGORoleLabel, PGOReplica)), Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, Ports: pgPort(), Selector: cl(PGORoleLabel, PGOReplica)}}
	out.Services = []*corev1.Service{pods, dcs, leader, primary, replicas}
	out.LeaderService = leader

	// reconcileInstanceSetPodDisruptionBudget: minAvailable 1 of 3.
	one := intstr.FromInt32(1)
	out.PDB = &policyv1.PodDisruptionBudget{
		ObjectMeta: meta(PGOPDBName(c), cl(PGOInstanceSetLabel, PGOInstanceSet)),
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: cl(PGOInstanceSetLabel, PGOInstanceSet)}},
	}

	out.Secrets = append(out.Secrets, &corev1.Secret{
		ObjectMeta: meta(PGOPasswordSecret(c), cl()),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"superuser-password": []byte(p.SuperPassword), "replication-password": []byte(p.ReplicationPassword)},
	})

	for _, inst := range PGOInstanceNames(c) {
		instLabels := func(extra ...string) map[string]string {
			return cl(append([]string{PGOInstanceSetLabel, PGOInstanceSet, PGOInstanceLabel, inst}, extra...)...)
		}
		// reconcileInstanceConfigMap.
		out.ConfigMaps = append(out.ConfigMaps, &corev1.ConfigMap{ObjectMeta: meta(PGOInstanceConfig(inst), instLabels()),
			Data: map[string]string{pgoConfigFileKey: pgoInstanceYAML(p)}})
		// reconcileInstanceCertificates: the leaf for the pod's DNS names.
		names := PGOPodDNSNames(c, ns, inst)
		leaf := pki.Leaf{CN: names[0], DNS: names}
		if ip := net.ParseIP(p.MemberIPs[inst]); ip != nil {
			leaf.IPs = []net.IP{ip}
		}
		crt, key, err := ca.Issue(leaf, pgoLeafValidity)
		if err != nil {
			return nil, fmt.Errorf("pgo: instance certificate of %s: %w", inst, err)
		}
		out.Secrets = append(out.Secrets, &corev1.Secret{
			ObjectMeta: meta(PGOInstanceCerts(inst), instLabels()),
			Type:       corev1.SecretTypeOpaque,
			Data: map[string][]byte{
				PGODNSCertKey:   crt,
				PGODNSKeyKey:    key,
				PGOCARootsKey:   ca.CertPEM,
				PGOCertCombined: append(append([]byte(nil), key...), crt...),
			},
		})
		// reconcilePostgresDataVolume.
		fs := corev1.PersistentVolumeFilesystem
		out.PVCs = append(out.PVCs, &corev1.PersistentVolumeClaim{
			ObjectMeta: meta(PGODataVolume(inst), instLabels(PGORoleLabel, "pgdata", PGODataLabel, PGODataPostgres)),
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				VolumeMode:  &fs,
			},
		})
		out.StatefulSets = append(out.StatefulSets, pgoStatefulSet(p, inst))
	}
	return out, nil
}

// pgoStatefulSet is the instance's StatefulSet as
// generateInstanceStatefulSetIntent, postgres.InstancePod and
// patroni.InstancePod render it (no pgBackRest, no monitoring, no
// replication certificates: see docs/sandbox.md).
func pgoStatefulSet(p PGOParams, inst string) *appsv1.StatefulSet {
	c := p.Name
	labels := map[string]string{PGOClusterLabel: c, PGOInstanceSetLabel: PGOInstanceSet, PGOInstanceLabel: inst, PGODataLabel: PGODataPostgres}
	selector := map[string]string{PGOClusterLabel: c, PGOInstanceSetLabel: PGOInstanceSet, PGOInstanceLabel: inst}
	podLabels := map[string]string{PGOPatroniLabel: PGOScope(c)}
	for k, v := range labels {
		podLabels[k] = v
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	secret := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: PGOPasswordSecret(c)}, Key: key}}
	}
	dataDir := fmt.Sprintf("%s/pg%d", pgoDataMount, p.PGVersion)
	// instanceEnvironment's PATRONI_KUBERNETES_PORTS: the leader
	// Service's ports matched to the container's by name.
	ports, _ := yaml.Marshal([]corev1.EndpointPort{{Name: "postgres", Port: pgoPostgresPort, Protocol: corev1.ProtocolTCP}})
	env := []corev1.EnvVar{
		// postgres.Environment.
		{Name: "PGDATA", Value: dataDir},
		{Name: "PGHOST", Value: "/tmp/postgres"},
		{Name: "PGPORT", Value: strconv.Itoa(pgoPostgresPort)},
		{Name: "KRB5_CONFIG", Value: "/etc/postgres/krb5.conf"},
		{Name: "KRB5RCACHEDIR", Value: "/tmp"},
		{Name: "LDAPTLS_CACERT", Value: "/etc/postgres/ldap/ca.crt"},
		// patroni.instanceEnvironment.
		{Name: "PATRONI_NAME", ValueFrom: field("metadata.name")},
		{Name: "PATRONI_KUBERNETES_POD_IP", ValueFrom: field("status.podIP")},
		{Name: "PATRONI_KUBERNETES_PORTS", Value: string(ports)},
		{Name: "PATRONI_POSTGRESQL_CONNECT_ADDRESS", Value: fmt.Sprintf("$(PATRONI_NAME).%s:%d", PGOPodService(c), pgoPostgresPort)},
		{Name: "PATRONI_POSTGRESQL_LISTEN", Value: fmt.Sprintf("*:%d", pgoPostgresPort)},
		{Name: "PATRONI_POSTGRESQL_CONFIG_DIR", Value: dataDir},
		{Name: "PATRONI_POSTGRESQL_DATA_DIR", Value: dataDir},
		{Name: "PATRONI_RESTAPI_CONNECT_ADDRESS", Value: fmt.Sprintf("$(PATRONI_NAME).%s:%d", PGOPodService(c), pgoPatroniPort)},
		{Name: "PATRONI_RESTAPI_LISTEN", Value: fmt.Sprintf("*:%d", pgoPatroniPort)},
		{Name: "PATRONICTL_CONFIG_FILE", Value: pgoConfigDir},
		// The sandbox's passwords, for PGO's replication certificate.
		{Name: "PATRONI_SUPERUSER_PASSWORD", ValueFrom: secret("superuser-password")},
		{Name: "PATRONI_REPLICATION_PASSWORD", ValueFrom: secret("replication-password")},
		{Name: "PATRONI_REWIND_PASSWORD", ValueFrom: secret("replication-password")},
	}
	probe := func(path string) *corev1.Probe {
		// probeTiming with PGO's defaults (leaderLeaseDurationSeconds 30,
		// syncPeriodSeconds 10).
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(pgoPatroniPort), Scheme: corev1.URISchemeHTTPS}},
			InitialDelaySeconds: 3, TimeoutSeconds: 5, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	no, yes := false, true
	one, zero := int32(1), int32(0)
	onRoot := corev1.FSGroupChangeOnRootMismatch
	cmItem := func(name, path string) corev1.VolumeProjection {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: pgoConfigFileKey, Path: path}},
		}}
	}
	tmpLimit := resource.MustParse("16Mi")
	spread := func(key string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{PGOClusterLabel: c},
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: PGODataLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{PGODataPostgres, "pgbackrest"}}},
			},
		}
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: inst, Namespace: p.Namespace, Labels: labels, OwnerReferences: pgoOwner(p)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             &one,
			Selector:             &metav1.LabelSelector{MatchLabels: selector},
			ServiceName:          PGOPodService(c),
			RevisionHistoryLimit: &zero,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: map[string]string{"kubectl.kubernetes.io/default-container": "database"},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:             corev1.RestartPolicyAlways,
					ShareProcessNamespace:     &yes,
					ServiceAccountName:        PGOInstanceRBAC(c),
					EnableServiceLinks:        &no,
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{spread(corev1.LabelHostname), spread(corev1.LabelTopologyZone)},
					SecurityContext: &corev1.PodSecurityContext{
						FSGroup: &p.RunAsGroup, FSGroupChangePolicy: &onRoot, RunAsNonRoot: &yes,
						RunAsUser: &p.RunAsUser, RunAsGroup: &p.RunAsGroup,
					},
					Containers: []corev1.Container{{
						Name:  "database",
						Image: pgoImage,
						// patroni.InstancePod with postgres.ShellPath.
						Command: []string{"sh", "-c", "--", fmt.Sprintf(`PATH="/usr/lib/postgresql/%[1]d/bin:/usr/libexec/postgresql%[1]d:/usr/pgsql-%[1]d/bin${PATH+:${PATH}}"`, p.PGVersion) +
							` && exec "$@"`, "--", "patroni", pgoConfigDir},
						Env:   env,
						Ports: []corev1.ContainerPort{{Name: "postgres", ContainerPort: pgoPostgresPort, Protocol: corev1.ProtocolTCP}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, Privileged: &no, ReadOnlyRootFilesystem: &yes, RunAsNonRoot: &yes,
							Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						LivenessProbe:  probe("/liveness"),
						ReadinessProbe: probe("/readiness"),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "postgres-data", MountPath: pgoDataMount},
							{Name: "database-containerinfo", MountPath: "/etc/database-containerinfo", ReadOnly: true},
							{Name: "patroni-config", MountPath: pgoConfigDir, ReadOnly: true},
							{Name: "tmp", MountPath: "/tmp"},
							{Name: "dshm", MountPath: "/dev/shm"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "postgres-data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PGODataVolume(inst)}}},
						{Name: "database-containerinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
							Items: []corev1.DownwardAPIVolumeFile{
								{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
								{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations"}},
							}}}},
						{Name: "patroni-config", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
							Sources: []corev1.VolumeProjection{
								cmItem(PGOClusterConfig(c), "~postgres-operator_cluster.yaml"),
								cmItem(PGOInstanceConfig(inst), "~postgres-operator_instance.yaml"),
								{Secret: &corev1.SecretProjection{
									LocalObjectReference: corev1.LocalObjectReference{Name: PGOInstanceCerts(inst)},
									Items: []corev1.KeyToPath{
										{Key: PGOCARootsKey, Path: pgoCARootsPath},
										{Key: PGOCertCombined, Path: pgoCertKeyPath},
									},
								}},
							}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpLimit}}},
						{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					},
				},
			},
		},
	}
}

// EnsurePGOCRD creates PGO's PostgresCluster CRD (a minimal schema: spec
// and status preserve unknown fields; names, short name and the status
// subresource as config/crd declares them) unless it exists, and waits
// until it is established.
func EnsurePGOCRD(ctx context.Context, dyn dynamic.Interface) error {
	open := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":   PostgresClusterGVR.Resource + "." + PGOGroup,
			"labels": map[string]any{"app.kubernetes.io/name": "pgo"},
		},
		"spec": map[string]any{
			"group": PGOGroup,
			"names": map[string]any{
				"kind": PGOKind, "listKind": PGOKind + "List", "plural": PostgresClusterGVR.Resource, "singular": "postgrescluster",
			},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": PGOVersion, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "properties": map[string]any{"spec": open, "status": open},
				}},
				"subresources": map[string]any{"status": map[string]any{}},
			}},
		},
	}}
	return createCRD(ctx, dyn, crd)
}

// pgoPassword is a password as PGO generates them (random letters and
// digits).
func pgoPassword() string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// pgoParams are the cluster's parameters in env.
func pgoParams(env Env, cluster string) (PGOParams, error) {
	uid, gid, bin, err := PostgresUser()
	if err != nil {
		return PGOParams{}, err
	}
	v, err := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	if err != nil {
		return PGOParams{}, fmt.Errorf("PostgreSQL version of %s: %w", bin, err)
	}
	ips := map[string]string{}
	if env.Address != nil {
		for _, inst := range PGOInstanceNames(cluster) {
			a, err := env.Address(inst + "-0")
			if err != nil {
				return PGOParams{}, fmt.Errorf("address of %s-0: %w", inst, err)
			}
			ips[inst] = a
		}
	}
	return PGOParams{Name: cluster, Namespace: env.Namespace, PGVersion: v, RunAsUser: uid, RunAsGroup: gid,
		SuperPassword: pgoPassword(), ReplicationPassword: pgoPassword(), MemberIPs: ips}, nil
}

// ensurePGORoot returns the namespace's root CA, creating pgo-root-cacert
// unless another cluster did, and adds an owner reference to p's
// PostgresCluster to it (not a controller: reconcileRootCertificate).
func ensurePGORoot(ctx context.Context, env Env, p PGOParams) (*PGOCA, error) {
	secrets := env.Kube.CoreV1().Secrets(p.Namespace)
	owner := pgoOwner(p)[0]
	owner.Controller, owner.BlockOwnerDeletion = nil, nil
	for {
		cur, err := secrets.Get(ctx, PGORootSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			ca, err := NewPGOCA()
			if err != nil {
				return nil, err
			}
			s := PGORootSecretObject(p.Namespace, ca)
			s.OwnerReferences = []metav1.OwnerReference{owner}
			if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err == nil {
				return ca, nil
			} else if !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating Secret %s: %w", PGORootSecret, err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", PGORootSecret, err)
		}
		ca, err := ParsePGOCA(cur.Data)
		if err != nil {
			return nil, err
		}
		cur.OwnerReferences = append(cur.OwnerReferences, owner)
		if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("updating Secret %s: %w", PGORootSecret, err)
		}
		return ca, nil
	}
}

// formPGO plays PGO for the cluster of p: the CRD, the PostgresCluster,
// the root CA, every object of PGOObjects (the Endpoints of
// <cluster>-primary naming <cluster>-ha's ClusterIP), then, once the
// Patroni cluster has formed (a running master with both replicas
// streaming, every pod Ready), the PostgresCluster's status. It returns
// the leader pod and the replica pods, sorted.
func formPGO(ctx context.Context, env Env, p PGOParams) (leader string, replicas []string, err error) {
	begin := time.Now()
	if env.Dynamic == nil {
		return "", nil, errors.New("the pgo scenarios need a dynamic client")
	}
	if err := EnsurePGOCRD(ctx, env.Dynamic); err != nil {
		return "", nil, err
	}
	ri := env.Dynamic.Resource(PostgresClusterGVR).Namespace(p.Namespace)
	created, err := createWithRetry(ctx, ri, PGOPostgresCluster(p))
	if err != nil {
		return "", nil, fmt.Errorf("creating PostgresCluster %s: %w", p.Name, err)
	}
	p.UID = created.GetUID()
	ca, err := ensurePGORoot(ctx, env, p)
	if err != nil {
		return "", nil, err
	}
	o, err := PGOObjects(p, ca)
	if err != nil {
		return "", nil, err
	}
	kc, ns := env.Kube, p.Namespace
	create := func(kind, name string, err error) error {
		if err != nil {
			return fmt.Errorf("creating %s %s: %w", kind, name, err)
		}
		return nil
	}
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, o.ServiceAccount, metav1.CreateOptions{}); err != nil {
		return "", nil, create("ServiceAccount", o.ServiceAccount.Name, err)
	}
	if _, err := kc.RbacV1().Roles(ns).Create(ctx, o.Role, metav1.CreateOptions{}); err != nil {
		return "", nil, create("Role", o.Role.Name, err)
	}
	if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, o.RoleBinding, metav1.CreateOptions{}); err != nil {
		return "", nil, create("RoleBinding", o.RoleBinding.Name, err)
	}
	for _, x := range o.ConfigMaps {
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, create("ConfigMap", x.Name, err)
		}
	}
	for _, x := range o.Secrets {
		if _, err := kc.CoreV1().Secrets(ns).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, create("Secret", x.Name, err)
		}
	}
	var leaderIP string
	for _, x := range o.Services {
		s, err := kc.CoreV1().Services(ns).Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return "", nil, create("Service", x.Name, err)
		}
		if x == o.LeaderService {
			leaderIP = s.Spec.ClusterIP
		}
		if x.Name == PGOPrimaryService(p.Name) {
			// generateClusterPrimaryService's Endpoints: the ClusterIP
			// of the leader Service, whose Endpoints Patroni keeps.
			ep := &corev1.Endpoints{ObjectMeta: x.ObjectMeta, Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: leaderIP}},
				Ports:     []corev1.EndpointPort{{Name: "postgres", Port: pgoPostgresPort, Protocol: corev1.ProtocolTCP}},
			}}}
			if _, err := kc.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
				return "", nil, create("Endpoints", ep.Name, err)
			}
		}
	}
	for _, x := range o.PVCs {
		if _, err := kc.CoreV1().PersistentVolumeClaims(ns).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, create("PersistentVolumeClaim", x.Name, err)
		}
	}
	for _, x := range o.StatefulSets {
		if _, err := kc.AppsV1().StatefulSets(ns).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, create("StatefulSet", x.Name, err)
		}
	}
	if _, err := kc.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, o.PDB, metav1.CreateOptions{}); err != nil {
		return "", nil, create("PodDisruptionBudget", o.PDB.Name, err)
	}
	if leader, replicas, err = waitPGOFormed(ctx, env, p.Name, begin); err != nil {
		return "", nil, err
	}
	err = updateStatus(ctx, ri, p.Name, func(*unstructured.Unstructured) map[string]any {
		sets := []any{map[string]any{"name": PGOInstanceSet, "replicas": int64(PGOInstances), "readyReplicas": int64(PGOInstances),
			"updatedReplicas": int64(PGOInstances)}}
		return map[string]any{"instances": sets, "patroni": map[string]any{}, "observedGeneration": created.GetGeneration()}
	})
	if err != nil {
		return "", nil, fmt.Errorf("PostgresCluster %s status: %w", p.Name, err)
	}
	return leader, replicas, nil
}

// waitPGOFormed waits until cluster's instance pods form a Patroni
// cluster (as waitFormed does for a StatefulSet's) and every instance
// StatefulSet has rolled out.
func waitPGOFormed(ctx context.Context, env Env, cluster string, begin time.Time) (leader string, replicas []string, err error) {
	all := PGOPods(cluster)
	err = waitPatroni(ctx, env, cluster, "a primary with every replica streaming", all, func(sts map[string]PatroniStatus) bool {
		l, ok := leaderOf(sts)
		if !ok {
			return false
		}
		for _, m := range all {
			if m == l {
				continue
			}
			if st, ok := sts[m]; !ok || st.Role != "replica" || st.State != "running" || !sts[l].streaming(m) {
				return false
			}
		}
		leader = l
		return true
	})
	if err != nil {
		return "", nil, err
	}
	for _, inst := range PGOInstanceNames(cluster) {
		if err := waitRollout(ctx, env, inst); err != nil {
			return "", nil, err
		}
	}
	for _, m := range all {
		if m != leader {
			replicas = append(replicas, m)
		}
	}
	sort.Strings(replicas)
	env.Logf("scenario %s: Patroni cluster formed in %s: leader %s, replicas %s streaming", cluster,
		time.Since(begin).Round(100*time.Millisecond), leader, strings.Join(replicas, ", "))
	return leader, replicas, nil
}

// pgoCluster is the cluster name of pgo scenario name: hippo, as PGO's
// examples name theirs, then what the scenario adds.
func pgoCluster(name string) string {
	if rest, ok := strings.CutPrefix(name, "pgo-"); ok {
		return "hippo-" + rest
	}
	return "hippo"
}

func init() {
	register(&Scenario{
		Name:    "pgo",
		Cluster: pgoCluster("pgo"),
		Shape:   PGOOperator,
		// PGO's budget (minAvailable 1 over the 3 instances) lets a drain
		// take 2 at once: the primary and the only other candidate, or
		// both replicas. To be confirmed against the real binary.
		Reasons: []model.ReasonCode{model.ReasonPDBAllowsQuorumLoss},
		Summary: "Crunchy PGO v5's layout: a PostgresCluster hippo with one instance set of 3, three StatefulSets " +
			"hippo-instance1-XXXX (one pod each) running Patroni (DCS on Endpoints, scope hippo-ha, REST over HTTPS with " +
			"client-certificate checks on unsafe calls) and PostgreSQL; Services hippo-pods, hippo-ha, hippo-ha-config, " +
			"hippo-primary, hippo-replicas; PodDisruptionBudget hippo-set-instance1 (minAvailable 1): a master and 2 replicas streaming",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			p, err := pgoParams(env, s.ClusterName())
			if err != nil {
				return err
			}
			_, _, err = formPGO(ctx, env, p)
			return err
		},
	})
	register(&Scenario{
		Name:    "pgo-lock-stale",
		Cluster: pgoCluster("pgo-lock-stale"),
		Shape:   PGOOperator,
		Summary: "a PGO cluster in maintenance mode, then the primary's Patroni frozen (SIGSTOP; PostgreSQL keeps running): " +
			"the leader lock on the Endpoints hippo-lock-stale-ha goes stale and the primary's REST API answers nothing",
		Reasons: []model.ReasonCode{model.ReasonLeaderLockStale, model.ReasonMaintenancePaused, model.ReasonMemberUnreachable,
			model.ReasonPrimaryMissing, model.ReasonPDBAllowsQuorumLoss},
		MayAlso: []model.ReasonCode{model.ReasonPodNotReady, model.ReasonClientEndpointsMissing},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			c := s.ClusterName()
			p, err := pgoParams(env, c)
			if err != nil {
				return err
			}
			leader, _, err := formPGO(ctx, env, p)
			if err != nil {
				return err
			}
			if err := setPause(ctx, env, c, leader, true, PGOPods(c)...); err != nil {
				return err
			}
			return freezeLeader(ctx, env, PGOScope(c), leader, endpointsLeaderLock)
		},
	})
	register(&Scenario{
		Name:    "pgo-replica-lagging",
		Cluster: pgoCluster("pgo-replica-lagging"),
		Shape:   PGOOperator,
		Summary: "a PGO cluster (spec.patroni.dynamicConfiguration.maximum_lag_on_failover 1 MiB) whose first replica's WAL " +
			"replay is stalled while the primary writes 8 MiB of WAL: it receives but replays nothing, 8× maximum_lag_on_failover behind",
		Reasons: []model.ReasonCode{model.ReasonReplicaLagging, model.ReasonPDBAllowsQuorumLoss},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			c := s.ClusterName()
			p, err := pgoParams(env, c)
			if err != nil {
				return err
			}
			p.MaximumLagOnFailover = maximumLagOnFailover
			if _, _, err := formPGO(ctx, env, p); err != nil {
				return err
			}
			return stallReplica(ctx, env, c, PGOPods(c))
		},
	})
}
