package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

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

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
	"github.com/hactl-dev/hactl/sandbox/volumes"
)

// CloudNativePG (github.com/cloudnative-pg/cloudnative-pg @a95a534,
// v1.30.0) cannot run here: neither its operator nor its instance
// manager can be built. The cnpg scenarios play the operator: through the
// API they install its Cluster CRD, create a Cluster and every object the
// operator creates for it, as it renders them (pkg/specs/pods.go
// NewInstance, createClusterPodSpec, createPostgresContainers,
// CreatePodEnvConfig; pkg/specs/volumes.go; pkg/specs/containers.go;
// pkg/specs/services.go; pkg/specs/poddisruptionbudget.go;
// pkg/specs/roles.go, serviceaccount; pkg/specs/secrets.go CreateSecret;
// pkg/reconciler/persistentvolumeclaim build.go, calculator.go), one
// instance after the other, and the Cluster's status as the operator
// writes it once the cluster is healthy (api/v1/cluster_types.go). There
// is no StatefulSet: the pods <cluster>-<serial> are controlled by the
// Cluster. The runner plays the kubelet for them and runs, in place of
// the instance manager (/controller/manager instance run), the stand-in
// of package cnpgstandin around the host's PostgreSQL 15. Nothing carries
// a label or annotation of hactl's.
const (
	CNPGGroup      = cnpgstandin.Group
	CNPGVersion    = cnpgstandin.Version
	CNPGAPIVersion = CNPGGroup + "/" + CNPGVersion
	CNPGKind       = cnpgstandin.Kind

	// CNPGImage is the cluster's imageName (status.image); the runner
	// never pulls it: the stand-in runs the host's PostgreSQL of its
	// major version.
	CNPGImage = "ghcr.io/cloudnative-pg/postgresql:15"
	// CNPGOperatorImage is the bootstrap-controller init container's
	// image (configuration.Current.OperatorImageName); the runner does not
	// run init containers.
	CNPGOperatorImage = "ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0"

	CNPGClusterLabel      = cnpgstandin.ClusterLabel
	CNPGInstanceNameLabel = cnpgstandin.InstanceNameLabel
	CNPGInstanceRoleLabel = cnpgstandin.InstanceRoleLabel
	CNPGRoleLabel         = cnpgstandin.RoleLabel
	CNPGPodRoleLabel      = cnpgstandin.PodRoleLabel
	CNPGPVCRoleLabel      = "cnpg.io/pvcRole"
	CNPGNodeSerial        = "cnpg.io/nodeSerial"
	CNPGPVCStatus         = "cnpg.io/pvcStatus"
	CNPGPodEnvHash        = "cnpg.io/podEnvHash"
	CNPGOperatorVersion   = "cnpg.io/operatorVersion"
	CNPGUserTypeLabel     = "cnpg.io/userType"
	CNPGReloadLabel       = "cnpg.io/reload"
	CNPGPrimary           = cnpgstandin.RolePrimary
	CNPGReplica           = cnpgstandin.RoleReplica
	CNPGPhaseHealthy      = cnpgstandin.PhaseHealthy
	CNPGPhaseSwitchover   = cnpgstandin.PhaseSwitchover

	// CNPGDataMount is the pgdata volume's mount; CNPGPGData is PGDATA.
	CNPGDataMount = "/var/lib/postgresql/data"
	CNPGPGData    = CNPGDataMount + "/pgdata"
	// CNPGSuperUser and CNPGAppUser are the Secrets' users.
	CNPGSuperUser = "postgres"
	CNPGAppUser   = "app"
	// CNPGStatusPort is the instance manager's status port.
	CNPGStatusPort = cnpgstandin.StatusPort

	cnpgInstances   = 3
	cnpgOperatorVer = "1.30.0"
)

// ClusterGVR is cnpg's Cluster resource.
var ClusterGVR = schema.GroupVersionResource{Group: CNPGGroup, Version: CNPGVersion, Resource: "clusters"}

// cnpg's names for a Cluster's objects (api/v1/cluster_funcs.go).
func CNPGInstanceName(cluster string, serial int) string {
	return fmt.Sprintf("%s-%d", cluster, serial)
}
func CNPGSuperuserSecret(cluster string) string { return cnpgstandin.SuperuserSecret(cluster) }
func CNPGAppSecret(cluster string) string       { return cnpgstandin.AppSecret(cluster) }
func CNPGServiceRW(cluster string) string       { return cluster + "-rw" }
func CNPGServiceRO(cluster string) string       { return cluster + "-ro" }
func CNPGServiceR(cluster string) string        { return cluster + "-r" }
func CNPGPrimaryPDB(cluster string) string      { return cluster + "-primary" }

// CNPGStandInRole names the Role (and RoleBinding) the sandbox adds for
// what the stand-in does in the operator's stead: labelling the pods.
// cnpg's own Role <cluster> lets the instance manager read and patch its
// Cluster's status but not patch pods.
func CNPGStandInRole(cluster string) string { return cluster + "-sandbox-operator-stand-in" }

// CNPGParams describe a Cluster the operator lays out.
type CNPGParams struct {
	Name, Namespace string
	// UID is the Cluster's (its objects' controller).
	UID types.UID
	// PostgresUID and PostgresGID are spec.postgresUID/postgresGID: the
	// host's postgres user (PostgreSQL refuses root).
	PostgresUID, PostgresGID int64
	// SuperPassword and AppPassword are the Secrets' passwords.
	SuperPassword, AppPassword string
}

func cnpgCommonLabels(cluster string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "postgresql",
		"app.kubernetes.io/instance":   cluster,
		"app.kubernetes.io/version":    "15",
		"app.kubernetes.io/component":  "database",
		"app.kubernetes.io/managed-by": "cloudnative-pg",
	}
}

// CNPGOwner is the controller reference to the Cluster
// (SetControllerReference: blockOwnerDeletion and controller true).
func CNPGOwner(cluster string, uid types.UID) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: CNPGAPIVersion, Kind: CNPGKind, Name: cluster, UID: uid, Controller: &t, BlockOwnerDeletion: &t}
}

// CNPGCluster is the Cluster as a user applies it.
func CNPGCluster(p CNPGParams) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CNPGAPIVersion, "kind": CNPGKind,
		"metadata": map[string]any{"name": p.Name, "namespace": p.Namespace},
		"spec": map[string]any{
			"instances":             int64(cnpgInstances),
			"imageName":             CNPGImage,
			"enableSuperuserAccess": true,
			"postgresUID":           p.PostgresUID,
			"postgresGID":           p.PostgresGID,
			"primaryUpdateStrategy": "unsupervised",
			"storage":               map[string]any{"size": "1Gi", "storageClass": volumes.StorageClass},
			"bootstrap":             map[string]any{"initdb": map[string]any{"database": "app", "owner": CNPGAppUser}},
		},
	}}
}

// EnsureCNPGCRD installs cnpg's Cluster CRD (minimal schema: spec and
// status preserve unknown fields; the status and scale subresources and
// printer columns of config/crd/bases/postgresql.cnpg.io_clusters.yaml).
func EnsureCNPGCRD(ctx context.Context, dyn dynamic.Interface) error {
	col := func(name, typ, path, desc string) map[string]any {
		m := map[string]any{"name": name, "type": typ, "jsonPath": path}
		if desc != "" {
			m["description"] = desc
		}
		return m
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "clusters." + CNPGGroup},
		"spec": map[string]any{
			"group": CNPGGroup, "scope": "Namespaced",
			"names": map[string]any{"kind": CNPGKind, "listKind": "ClusterList", "plural": "clusters", "singular": "cluster"},
			"versions": []any{map[string]any{
				"name": CNPGVersion, "served": true, "storage": true,
				"subresources": map[string]any{
					"status": map[string]any{},
					"scale":  map[string]any{"specReplicasPath": ".spec.instances", "statusReplicasPath": ".status.instances"},
				},
				"additionalPrinterColumns": []any{
					col("Age", "date", ".metadata.creationTimestamp", ""),
					col("Instances", "integer", ".status.instances", "Number of instances"),
					col("Ready", "integer", ".status.readyInstances", "Number of ready instances"),
					col("Status", "string", ".status.phase", "Cluster current status"),
					col("Primary", "string", ".status.currentPrimary", "Primary pod"),
				},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"apiVersion": map[string]any{"type": "string"},
						"kind":       map[string]any{"type": "string"},
						"metadata":   map[string]any{"type": "object"},
						"spec":       map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
						"status":     map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	}}
	return createCRD(ctx, dyn, crd)
}

// CNPGLayout is every object the operator creates for a Cluster, before
// its pods.
type CNPGLayout struct {
	ServiceAccount *corev1.ServiceAccount
	Roles          []*rbacv1.Role
	RoleBindings   []*rbacv1.RoleBinding
	Secrets        []*corev1.Secret
	Services       []*corev1.Service
	PDBs           []*policyv1.PodDisruptionBudget
}

// CNPGObjects renders the Cluster's ServiceAccount, Role and RoleBinding
// <c> (plus the stand-in's, CNPGStandInRole), Secrets, Services and
// PodDisruptionBudgets.
func CNPGObjects(p CNPGParams) *CNPGLayout {
	c, ns := p.Name, p.Namespace
	own := []metav1.OwnerReference{CNPGOwner(c, p.UID)}
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: own}
	}
	l := &CNPGLayout{ServiceAccount: &corev1.ServiceAccount{ObjectMeta: meta(c, nil)}}
	secrets := []string{c + "-replication", c + "-ca", c + "-server", CNPGAppSecret(c), CNPGSuperuserSecret(c)}
	l.Roles = []*rbacv1.Role{
		{ObjectMeta: meta(c, nil), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "watch"}, ResourceNames: []string{c}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "watch"}, ResourceNames: secrets},
			{APIGroups: []string{CNPGGroup}, Resources: []string{"clusters"}, Verbs: []string{"get", "list", "watch"}, ResourceNames: []string{c}},
			{APIGroups: []string{CNPGGroup}, Resources: []string{"clusters/status"}, Verbs: []string{"get", "patch", "update", "watch"}, ResourceNames: []string{c}},
			{APIGroups: []string{CNPGGroup}, Resources: []string{"backups"}, Verbs: []string{"list", "get", "delete"}},
			{APIGroups: []string{CNPGGroup}, Resources: []string{"backups/status"}, Verbs: []string{"get", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{c}},
		}},
		{ObjectMeta: meta(CNPGStandInRole(c), nil), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "patch"}},
		}},
	}
	for _, r := range l.Roles {
		l.RoleBindings = append(l.RoleBindings, &rbacv1.RoleBinding{ObjectMeta: meta(r.Name, nil),
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: c, Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: r.Name}})
	}
	l.Secrets = []*corev1.Secret{
		cnpgSecret(p, CNPGSuperuserSecret(c), "*", CNPGSuperUser, p.SuperPassword, "superuser"),
		cnpgSecret(p, CNPGAppSecret(c), "app", CNPGAppUser, p.AppPassword, "app"),
	}
	ports := []corev1.ServicePort{{Name: "postgres", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)}}
	svc := func(name string, sel map[string]string, notReady bool) *corev1.Service {
		labels := cnpgCommonLabels(c)
		labels[CNPGClusterLabel] = c
		return &corev1.Service{ObjectMeta: meta(name, labels), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, Ports: ports, Selector: sel, PublishNotReadyAddresses: notReady}}
	}
	l.Services = []*corev1.Service{
		svc(CNPGServiceR(c), map[string]string{CNPGClusterLabel: c, CNPGPodRoleLabel: cnpgstandin.PodRoleInstance}, false),
		svc(CNPGServiceRO(c), map[string]string{CNPGClusterLabel: c, CNPGInstanceRoleLabel: CNPGReplica}, false),
		svc(CNPGServiceRW(c), map[string]string{CNPGClusterLabel: c, CNPGInstanceRoleLabel: CNPGPrimary}, false),
	}
	pdb := func(name string, role string, min int32) *policyv1.PodDisruptionBudget {
		m := intstr.FromInt32(min)
		return &policyv1.PodDisruptionBudget{ObjectMeta: meta(name, cnpgCommonLabels(c)), Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{CNPGClusterLabel: c, CNPGInstanceRoleLabel: role}},
			MinAvailable: &m}}
	}
	l.PDBs = []*policyv1.PodDisruptionBudget{
		pdb(c, CNPGReplica, cnpgInstances-2),
		pdb(CNPGPrimaryPDB(c), CNPGPrimary, 1),
	}
	return l
}

// cnpgSecret is CreateSecret's Secret (type basic-auth) for user.
func cnpgSecret(p CNPGParams, name, dbname, user, password, userType string) *corev1.Secret {
	host := CNPGServiceRW(p.Name)
	nsHost := fmt.Sprintf("%s.%s:5432", host, p.Namespace)
	fqdn := fmt.Sprintf("%s.%s.svc.cluster.local:5432", host, p.Namespace)
	uri := func(h string) string { return fmt.Sprintf("postgresql://%s:%s@%s/%s", user, password, h, dbname) }
	jdbc := func(h string) string {
		return fmt.Sprintf("jdbc:postgresql://%s/%s?password=%s&user=%s", h, dbname, password, user)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace,
			Labels: map[string]string{CNPGUserTypeLabel: userType, CNPGReloadLabel: "true",
				"app.kubernetes.io/managed-by": "cloudnative-pg"},
			OwnerReferences: []metav1.OwnerReference{CNPGOwner(p.Name, p.UID)}},
		Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{
			"username": user, "user": user, "password": password, "dbname": dbname, "host": host, "port": "5432",
			"pgpass": fmt.Sprintf("%s:5432:%s:%s:%s\n", host, dbname, user, password),
			"uri":    uri(nsHost), "jdbc-uri": jdbc(nsHost), "fqdn-uri": uri(fqdn), "fqdn-jdbc-uri": jdbc(fqdn),
		},
	}
}

// CNPGPVC is instance serial's PGDATA claim as cnpg builds it (named as
// the instance; labels of pgDataCalculator; status annotation ready once
// the instance is initialised).
func CNPGPVC(p CNPGParams, serial int, status string) *corev1.PersistentVolumeClaim {
	name := CNPGInstanceName(p.Name, serial)
	sc := volumes.StorageClass
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace,
			Labels: map[string]string{
				CNPGClusterLabel: p.Name, CNPGInstanceNameLabel: name, CNPGPVCRoleLabel: "PG_DATA",
				"app.kubernetes.io/managed-by": "cloudnative-pg", "app.kubernetes.io/name": "postgresql",
				"app.kubernetes.io/component": "database",
			},
			Annotations: map[string]string{CNPGNodeSerial: fmt.Sprint(serial), CNPGPVCStatus: status,
				CNPGOperatorVersion: cnpgOperatorVer},
			OwnerReferences: []metav1.OwnerReference{CNPGOwner(p.Name, p.UID)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// CNPGPod is instance serial's pod as NewInstance renders it.
func CNPGPod(p CNPGParams, serial int) *corev1.Pod {
	name := CNPGInstanceName(p.Name, serial)
	labels := cnpgCommonLabels(p.Name)
	labels[CNPGClusterLabel] = p.Name
	labels[CNPGInstanceNameLabel] = name
	labels[CNPGPodRoleLabel] = cnpgstandin.PodRoleInstance
	env := []corev1.EnvVar{
		{Name: "PGDATA", Value: CNPGPGData},
		{Name: "POD_NAME", Value: name},
		{Name: "NAMESPACE", Value: p.Namespace},
		{Name: "CLUSTER_NAME", Value: p.Name},
		{Name: "PSQL_HISTORY", Value: "/controller/tmp/.psql_history"},
		{Name: "PGPORT", Value: "5432"},
		{Name: "PGHOST", Value: cnpgstandin.SocketDirectory},
		{Name: "TMPDIR", Value: "/controller/tmp"},
	}
	t, f := true, false
	grace := int64(1800)
	secCtx := &corev1.SecurityContext{
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		Privileged:               &f,
		RunAsNonRoot:             &t,
		ReadOnlyRootFilesystem:   &t,
		AllowPrivilegeEscalation: &f,
	}
	mounts := []corev1.VolumeMount{
		{Name: "pgdata", MountPath: CNPGDataMount},
		{Name: "scratch-data", MountPath: "/run"},
		{Name: "scratch-data", MountPath: "/controller"},
		{Name: "shm", MountPath: "/dev/shm"},
	}
	probe := func(path string, failure int32) *corev1.Probe {
		return &corev1.Probe{TimeoutSeconds: 5, PeriodSeconds: 10, FailureThreshold: failure,
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(CNPGStatusPort)}}}
	}
	uid, gid := p.PostgresUID, p.PostgresGID
	mode := corev1.ProjectedVolumeSourceDefaultMode
	exp := int64(3607)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: labels,
			Annotations: map[string]string{CNPGNodeSerial: fmt.Sprint(serial), CNPGPodEnvHash: cnpgEnvHash(env),
				CNPGOperatorVersion: cnpgOperatorVer},
			OwnerReferences: []metav1.OwnerReference{CNPGOwner(p.Name, p.UID)}},
		Spec: corev1.PodSpec{
			Hostname: name,
			InitContainers: []corev1.Container{{
				Name: "bootstrap-controller", Image: CNPGOperatorImage,
				Command:      []string{"/manager", "bootstrap", "/controller/manager"},
				VolumeMounts: mounts, SecurityContext: secCtx,
			}},
			Containers: []corev1.Container{{
				Name: "postgres", Image: CNPGImage,
				Env: env, VolumeMounts: append(append([]corev1.VolumeMount(nil), mounts...),
					corev1.VolumeMount{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}),
				StartupProbe:   probe("/startupz", 360),
				ReadinessProbe: probe("/readyz", 0),
				LivenessProbe:  probe("/healthz", 0),
				Command:        []string{"/controller/manager", "instance", "run"},
				Ports: []corev1.ContainerPort{
					{Name: "postgresql", ContainerPort: 5432, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9187, Protocol: corev1.ProtocolTCP},
					{Name: "status", ContainerPort: CNPGStatusPort, Protocol: corev1.ProtocolTCP},
				},
				SecurityContext: secCtx,
			}},
			Volumes: []corev1.Volume{
				{Name: "pgdata", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}},
				{Name: "scratch-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: &mode,
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
					},
				}}},
			},
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				RunAsUser:      &uid, RunAsGroup: &gid, RunAsNonRoot: &t, FSGroup: &gid,
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
							{Key: CNPGClusterLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{p.Name}},
							{Key: CNPGPodRoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{cnpgstandin.PodRoleInstance}},
						}},
						TopologyKey: "kubernetes.io/hostname"}}}}},
			ServiceAccountName:            p.Name,
			AutomountServiceAccountToken:  &f,
			TerminationGracePeriodSeconds: &grace,
		},
	}
}

// cnpgEnvHash stands for cnpg's hash of the pod's environment
// (hash.ComputeHash of the EnvConfig): a stable digest of it.
func cnpgEnvHash(env []corev1.EnvVar) string {
	b, _ := json.Marshal(env)
	var h uint32 = 2166136261
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%x", h)
}

// cnpgCluster is a Cluster being laid out.
type cnpgCluster struct {
	env Env
	p   CNPGParams
	ri  dynamic.ResourceInterface
}

func (c *cnpgCluster) logf(format string, args ...any) {
	c.env.Logf("cnpg %s: %s", c.p.Name, fmt.Sprintf(format, args...))
}

// formCNPG lays out cluster name as the operator does and returns once
// its primary streams to every replica.
func formCNPG(ctx context.Context, env Env, name string) (*cnpgCluster, error) {
	uid, gid, _, err := PostgresUser()
	if err != nil {
		return nil, err
	}
	if err := EnsureCNPGCRD(ctx, env.Dynamic); err != nil {
		return nil, err
	}
	c := &cnpgCluster{env: env, ri: env.Dynamic.Resource(ClusterGVR).Namespace(env.Namespace),
		p: CNPGParams{Name: name, Namespace: env.Namespace, PostgresUID: uid, PostgresGID: gid,
			SuperPassword: zalandoPassword(), AppPassword: zalandoPassword()}}
	obj, err := createWithRetry(ctx, c.ri, CNPGCluster(c.p))
	if err != nil {
		return nil, fmt.Errorf("creating Cluster %s: %w", name, err)
	}
	c.p.UID = obj.GetUID()
	first := CNPGInstanceName(name, 1)
	if err := c.patchStatus(ctx, map[string]any{
		"phase": "Setting up primary", "phaseReason": "Creating primary instance " + first,
		"targetPrimary": first, "targetPrimaryTimestamp": cnpgNow(), "latestGeneratedNode": int64(1),
		"image": CNPGImage, "writeService": CNPGServiceRW(name), "readService": CNPGServiceR(name),
	}); err != nil {
		return nil, err
	}
	if err := c.createObjects(ctx); err != nil {
		return nil, err
	}
	for serial := 1; serial <= cnpgInstances; serial++ {
		if serial > 1 {
			if err := c.patchStatus(ctx, map[string]any{"phase": "Creating a new replica",
				"phaseReason": "Creating replica " + CNPGInstanceName(name, serial), "latestGeneratedNode": int64(serial)}); err != nil {
				return nil, err
			}
		}
		if err := c.createInstance(ctx, serial); err != nil {
			return nil, err
		}
		if serial == 1 {
			if err := c.patchStatus(ctx, map[string]any{"currentPrimary": first, "currentPrimaryTimestamp": cnpgNow()}); err != nil {
				return nil, err
			}
		}
	}
	st, err := c.waitStreaming(ctx, first, cnpgInstances-1)
	if err != nil {
		return nil, err
	}
	return c, c.writeHealthy(ctx, st)
}

func cnpgNow() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// patchStatus merges fields into the Cluster's status (the status
// subresource, as the operator writes it).
func (c *cnpgCluster) patchStatus(ctx context.Context, fields map[string]any) error {
	b, _ := json.Marshal(map[string]any{"status": fields})
	_, err := c.ri.Patch(ctx, c.p.Name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing Cluster %s's status: %w", c.p.Name, err)
	}
	return nil
}

func (c *cnpgCluster) createObjects(ctx context.Context) error {
	l := CNPGObjects(c.p)
	kc, ns := c.env.Kube, c.p.Namespace
	ignoreExists := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, l.ServiceAccount, metav1.CreateOptions{}); ignoreExists("ServiceAccount", err) != nil {
		return ignoreExists("ServiceAccount", err)
	}
	for _, r := range l.Roles {
		if _, err := kc.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); ignoreExists("Role "+r.Name, err) != nil {
			return ignoreExists("Role "+r.Name, err)
		}
	}
	for _, r := range l.RoleBindings {
		if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, r, metav1.CreateOptions{}); ignoreExists("RoleBinding "+r.Name, err) != nil {
			return ignoreExists("RoleBinding "+r.Name, err)
		}
	}
	for _, s := range l.Secrets {
		if _, err := kc.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); ignoreExists("Secret "+s.Name, err) != nil {
			return ignoreExists("Secret "+s.Name, err)
		}
	}
	for _, s := range l.Services {
		if _, err := kc.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); ignoreExists("Service "+s.Name, err) != nil {
			return ignoreExists("Service "+s.Name, err)
		}
	}
	for _, b := range l.PDBs {
		if _, err := kc.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, b, metav1.CreateOptions{}); ignoreExists("PodDisruptionBudget "+b.Name, err) != nil {
			return ignoreExists("PodDisruptionBudget "+b.Name, err)
		}
	}
	return nil
}

// createInstance creates instance serial's PVC and pod, waits until the
// pod is Ready and marks the PVC ready, as the operator does once the
// instance has been initialised (its initdb or join job; here the
// stand-in initialises the instance in the pod).
func (c *cnpgCluster) createInstance(ctx context.Context, serial int) error {
	kc, ns := c.env.Kube, c.p.Namespace
	name := CNPGInstanceName(c.p.Name, serial)
	if _, err := kc.CoreV1().PersistentVolumeClaims(ns).Create(ctx, CNPGPVC(c.p, serial, "initializing"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PVC %s: %w", name, err)
	}
	if _, err := kc.CoreV1().Pods(ns).Create(ctx, CNPGPod(c.p, serial), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s: %w", name, err)
	}
	c.logf("instance %s created; waiting until it is Ready", name)
	if err := waitPod(ctx, c.env, name, "Ready", PodReady); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{CNPGPVCStatus: "ready"}}})
	_, err := kc.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

// CNPGInstanceStatus reads instance pod's /pg/status at its sandbox
// address, as the operator's status client does through the pod IP.
// It returns the HTTP status code and body.
func CNPGInstanceStatus(ctx context.Context, addr string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d/pg/status", addr, CNPGStatusPort), nil)
	if err != nil {
		return 0, nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func (c *cnpgCluster) pgStatus(ctx context.Context, pod string) (*cnpgstandin.PostgresqlStatus, error) {
	addr, err := c.env.Address(pod)
	if err != nil {
		return nil, err
	}
	code, b, err := CNPGInstanceStatus(ctx, addr)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s: /pg/status %d: %s", pod, code, strings.TrimSpace(string(b)))
	}
	var st cnpgstandin.PostgresqlStatus
	return &st, json.Unmarshal(b, &st)
}

// waitStreaming waits until primary's /pg/status reports n replicas
// streaming.
func (c *cnpgCluster) waitStreaming(ctx context.Context, primary string, n int) (*cnpgstandin.PostgresqlStatus, error) {
	var last error
	for {
		st, err := c.pgStatus(ctx, primary)
		if err == nil {
			streaming := 0
			for _, r := range st.ReplicationInfo {
				if r.State == "streaming" {
					streaming++
				}
			}
			if st.IsPrimary && streaming == n {
				return st, nil
			}
			err = fmt.Errorf("%s: primary %v, %d of %d replicas streaming", primary, st.IsPrimary, streaming, n)
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the replicas to stream: %v: %w", last, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// writeHealthy writes the status the operator writes once every
// instance is up (api/v1/cluster_types.go ClusterStatus).
func (c *cnpgCluster) writeHealthy(ctx context.Context, primary *cnpgstandin.PostgresqlStatus) error {
	var names []any
	reported := map[string]any{}
	for serial := 1; serial <= cnpgInstances; serial++ {
		n := CNPGInstanceName(c.p.Name, serial)
		names = append(names, n)
		pod, err := c.env.Kube.CoreV1().Pods(c.p.Namespace).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return err
		}
		reported[n] = map[string]any{"isPrimary": serial == 1, "timeLineID": int64(primary.TimeLineID), "ip": pod.Status.PodIP}
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	return c.patchStatus(ctx, map[string]any{
		"instances": int64(cnpgInstances), "readyInstances": int64(cnpgInstances),
		"instanceNames":          names,
		"instancesStatus":        map[string]any{"healthy": names},
		"instancesReportedState": reported,
		"healthyPVC":             names, "pvcCount": int64(cnpgInstances),
		"phase":       CNPGPhaseHealthy,
		"phaseReason": nil,
		"timelineID":  int64(primary.TimeLineID),
		"systemID":    primary.SystemID,
		"selector":    CNPGClusterLabel + "=" + c.p.Name,
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "ClusterIsReady", "message": "Cluster is Ready",
			"lastTransitionTime": now,
		}},
	})
}

// exec runs script with sh -c in pod's postgres container (its
// environment: PGDATA, PGHOST, PGPORT), as `kubectl exec` would.
func (c *cnpgCluster) exec(ctx context.Context, pod, script string) (string, error) {
	return c.env.Exec(ctx, pod, []string{"sh", "-c", script})
}

func cnpgBin() string {
	_, _, bin, err := PostgresUser()
	if err != nil {
		return "/usr/lib/postgresql/15/bin"
	}
	return bin
}

// runCNPGDown stops every instance's PostgreSQL (pg_ctl stop, fast) and
// leaves it stopped: the stand-ins keep serving /pg/status, which fails
// as cnpg's does, while the Cluster still says it is healthy (the
// operator, which does not run here, would have moved it on).
func runCNPGDown(ctx context.Context, env Env, s *Scenario) error {
	c, err := formCNPG(ctx, env, s.ClusterName())
	if err != nil {
		return err
	}
	for serial := cnpgInstances; serial >= 1; serial-- {
		pod := CNPGInstanceName(c.p.Name, serial)
		if out, err := c.exec(ctx, pod, cnpgBin()+`/pg_ctl stop -D "$PGDATA" -m fast -w`); err != nil {
			return fmt.Errorf("stopping PostgreSQL in %s: %v: %s", pod, err, out)
		}
		c.logf("PostgreSQL of %s stopped", pod)
	}
	for serial := 1; serial <= cnpgInstances; serial++ {
		pod := CNPGInstanceName(c.p.Name, serial)
		for {
			if _, err := c.pgStatus(ctx, pod); err != nil && strings.Contains(err.Error(), "/pg/status 500") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s's /pg/status to fail: %w", pod, ctx.Err())
			case <-time.After(poll):
			}
		}
	}
	return nil
}

// cnpgLagBytes is how much WAL the lagging scenario's primary writes
// while a replica's replay is paused.
const cnpgLagBytes = 8 << 20

// runCNPGReplicaLagging pauses one replica's replay
// (pg_wal_replay_pause()) and writes 8 MiB of WAL on the primary: the
// replica receives it all and replays none.
func runCNPGReplicaLagging(ctx context.Context, env Env, s *Scenario) error {
	c, err := formCNPG(ctx, env, s.ClusterName())
	if err != nil {
		return err
	}
	primary, other, victim := CNPGInstanceName(c.p.Name, 1), CNPGInstanceName(c.p.Name, 2), CNPGInstanceName(c.p.Name, 3)
	psql := cnpgBin() + `/psql -X -q -At -h "` + cnpgstandin.SocketDirShell + `" -U postgres -d postgres -c `
	// The other replica stops receiving (its WAL receiver cut off, as
	// a replica restarting or cut off from the primary is), so that the
	// victim is the one that received the most WAL: the one
	// CloudNativePG would promote.
	if out, err := c.exec(ctx, other, psql+`"ALTER SYSTEM SET primary_conninfo = ''" && `+psql+`"SELECT pg_catalog.pg_reload_conf()"`); err != nil {
		return fmt.Errorf("cutting %s's WAL receiver off: %v: %s", other, err, out)
	}
	for {
		if st, err := c.pgStatus(ctx, other); err == nil && !st.IsWalReceiverActive {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s's WAL receiver to stop: %w", other, ctx.Err())
		case <-time.After(poll):
		}
	}
	if out, err := c.exec(ctx, victim, psql+`"SELECT pg_catalog.pg_wal_replay_pause()"`); err != nil {
		return fmt.Errorf("pausing replay on %s: %v: %s", victim, err, out)
	}
	if out, err := c.exec(ctx, primary, psql+`"CREATE TABLE hactl_sandbox_lag AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 8600) g"`); err != nil {
		return fmt.Errorf("writing on %s: %v: %s", primary, err, out)
	}
	for {
		pst, err1 := c.pgStatus(ctx, primary)
		vst, err2 := c.pgStatus(ctx, victim)
		if err1 == nil && err2 == nil {
			cur, _ := cnpgParseLSN(pst.CurrentLsn)
			recv, _ := cnpgParseLSN(vst.ReceivedLsn)
			replay, _ := cnpgParseLSN(vst.ReplayLsn)
			if vst.ReplayPaused && recv >= cur && recv-replay >= cnpgLagBytes {
				c.logf("%s received %s, replayed %s (paused)", victim, vst.ReceivedLsn, vst.ReplayLsn)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to receive without replaying: %w", victim, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func cnpgParseLSN(s string) (uint64, bool) {
	var hi, lo uint64
	if _, err := fmt.Sscanf(s, "%X/%X", &hi, &lo); err != nil {
		return 0, false
	}
	return hi<<32 | lo, true
}

func init() {
	register(&Scenario{
		Name:    "cnpg",
		Shape:   CNPGOperator,
		Cluster: "cluster-example",
		Summary: "CloudNativePG's layout (a Cluster, instance pods <cluster>-<serial> without a StatefulSet, " +
			"-rw/-ro/-r Services, PodDisruptionBudgets, Secrets): 3 healthy instances, a primary and 2 replicas streaming",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, err := formCNPG(ctx, env, s.ClusterName())
			return err
		},
	})
	register(&Scenario{
		Name:    "cnpg-down",
		Shape:   CNPGOperator,
		Cluster: "cluster-down",
		Summary: "cloudnative-pg#5150: every instance's PostgreSQL stopped after forming and not restarted, " +
			"while the Cluster still says \"Cluster in healthy state\" and Ready=True; /pg/status answers 500",
		Reasons: []model.ReasonCode{model.ReasonCRStatusStale, model.ReasonPrimaryMissing, model.ReasonMemberNotReady},
		// The pods' readiness probe and the -rw Service follow a probe
		// period later.
		MayAlso: []model.ReasonCode{model.ReasonPodNotReady, model.ReasonClientEndpointsMissing},
		run:     runCNPGDown,
	})
	register(&Scenario{
		Name:    "cnpg-replica-lagging",
		Shape:   CNPGOperator,
		Cluster: "cluster-lagging",
		Summary: "cloudnative-pg#11110: one replica cut off from the primary (its primary_conninfo emptied) and the other's " +
			"WAL replay paused (pg_wal_replay_pause) while the primary writes 8 MiB of WAL: the second received the most, " +
			"so CloudNativePG would promote it, though its replayLsn is 8 MiB behind what it received",
		Reasons: []model.ReasonCode{model.ReasonReplicaLagging, model.ReasonReplicaNotStreaming, model.ReasonSwitchoverTargetLagging,
			model.ReasonFailoverCandidatesNone},
		run: runCNPGReplicaLagging,
	})
}
