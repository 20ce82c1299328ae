package scenario

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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

	"github.com/hactl-dev/hactl/model"
)

// The Zalando postgres-operator (github.com/zalando/postgres-operator,
// v2.0) cannot run here, so the zalando scenarios play it: they install
// its postgresql CRD and create a postgresql resource, then every object
// the operator creates for it, through the API and as the operator
// renders them (pkg/cluster/k8sres.go: generateStatefulSet,
// generatePodTemplate, generateSpiloPodEnvVars, generateService,
// generateEndpoint, generatePrimaryPodDisruptionBudget,
// generateCriticalOpPodDisruptionBudget, generateSingleUserSecret;
// pkg/cluster/cluster.go Create; pkg/controller/controller.go
// initPodServiceAccount, initRoleBinding; defaults from
// pkg/util/config/config.go and manifests/configmap.yaml; the pods'
// ClusterRole from manifests/operator-service-account-rbac.yaml), and
// finally the resource's status as the operator sets it once the cluster
// runs. The StatefulSet is the real controller-manager's; the runner
// plays the kubelet for its pods and runs, for the Spilo container
// (which has no command), the Spilo entrypoint stand-in
// (sandbox/spilostandin) around the host's Patroni and PostgreSQL.
// Nothing carries a label or annotation of hactl's.
const (
	// ZalandoGroup and ZalandoVersion are the operator's API
	// (pkg/apis/acid.zalan.do/v1).
	ZalandoGroup      = "acid.zalan.do"
	ZalandoVersion    = "v1"
	ZalandoAPIVersion = ZalandoGroup + "/" + ZalandoVersion
	// ZalandoKind is the kind of the operator's cluster resource.
	ZalandoKind = "postgresql"
	// ZalandoStatusRunning is the resource's status.PostgresClusterStatus
	// once the cluster is created (ClusterStatusRunning, const.go).
	ZalandoStatusRunning = "Running"

	// ZalandoImage is operator v2.0's default docker_image. The runner
	// never pulls it: it runs the Spilo stand-in for it.
	ZalandoImage = "ghcr.io/zalando/spilo-18:4.1-p2"
	// ZalandoTeam is the resources' teamId (the pods' team label).
	ZalandoTeam = "acid"
	// ZalandoPodServiceAccount is pod_service_account_name: the pods'
	// ServiceAccount, bound to the ClusterRole of that name.
	ZalandoPodServiceAccount = "postgres-pod"
	// The operator's labels (cluster_labels, cluster_name_label,
	// pod_role_label) and its role label values.
	ZalandoApplicationLabel = "application"
	ZalandoApplication      = "spilo"
	ZalandoClusterNameLabel = "cluster-name"
	ZalandoRoleLabel        = "spilo-role"
	ZalandoMaster           = "master"
	ZalandoReplica          = "replica"
	// ZalandoDataVolume and ZalandoDataMount are the data volume and its
	// mount (constants.DataVolumeName, PostgresDataMount); ZalandoPGRoot
	// is PGROOT (PostgresDataPath).
	ZalandoDataVolume = "pgdata"
	ZalandoDataMount  = "/home/postgres/pgdata"
	ZalandoPGRoot     = ZalandoDataMount + "/pgroot"
	// ZalandoSuperUser and ZalandoStandbyUser are super_username and
	// replication_username.
	ZalandoSuperUser   = "postgres"
	ZalandoStandbyUser = "standby"

	zalandoReplicas = 3
)

// PostgresqlGVR is the operator's postgresql resource.
var PostgresqlGVR = schema.GroupVersionResource{Group: ZalandoGroup, Version: ZalandoVersion, Resource: "postgresqls"}

// ZalandoSecretName is the credentials Secret of user in cluster
// (secret_name_template {username}.{cluster}.credentials.{tprkind}.{tprgroup}).
func ZalandoSecretName(user, cluster string) string {
	return user + "." + cluster + ".credentials." + ZalandoKind + "." + ZalandoGroup
}

// ZalandoReplicaService, ZalandoConfigName and ZalandoPDBName are the
// operator's names (serviceName, PrimaryPodDisruptionBudgetName with
// pdb_name_format postgres-{cluster}-pdb); ZalandoCriticalOpPDBName is its
// critical-operation budget.
func ZalandoReplicaService(cluster string) string { return cluster + "-repl" }
func ZalandoConfigName(cluster string) string     { return cluster + "-config" }
func ZalandoPDBName(cluster string) string        { return "postgres-" + cluster + "-pdb" }
func ZalandoCriticalOpPDBName(cluster string) string {
	return "postgres-" + cluster + "-critical-op-pdb"
}

// ZalandoLabels are labelsSet(false): the StatefulSet's selector.
func ZalandoLabels(cluster string) map[string]string {
	return map[string]string{ZalandoApplicationLabel: ZalandoApplication, ZalandoClusterNameLabel: cluster}
}

// zalandoExtraLabels are labelsSet(true): with the team label.
func zalandoExtraLabels(cluster string) map[string]string {
	l := ZalandoLabels(cluster)
	l["team"] = ZalandoTeam
	return l
}

func withRole(l map[string]string, role string) map[string]string {
	l[ZalandoRoleLabel] = role
	return l
}

// ZalandoParams describe a cluster the operator lays out.
type ZalandoParams struct {
	Name, Namespace string
	// ConfigMaps is the operator's kubernetes_use_configmaps (v2.0's
	// default): Patroni's DCS on ConfigMaps; else on Endpoints.
	ConfigMaps bool
	// PGVersion is spec.postgresql.version (PGVERSION).
	PGVersion string
	// MaximumLagOnFailover is spec.patroni.maximum_lag_on_failover (0:
	// unset, Spilo's default applies).
	MaximumLagOnFailover int64
	// RunAsUser and RunAsGroup are the operator's spilo_runasuser,
	// spilo_runasgroup and spilo_fsgroup (PostgreSQL refuses to run as
	// root): the host's postgres user, see PostgresUser.
	RunAsUser, RunAsGroup int64
	// SuperPassword and StandbyPassword are the users' passwords (the
	// operator generates them).
	SuperPassword, StandbyPassword string
}

// ZalandoLayout is every object the operator creates for a cluster.
type ZalandoLayout struct {
	Postgresql     *unstructured.Unstructured
	ServiceAccount *corev1.ServiceAccount
	ClusterRole    *rbacv1.ClusterRole
	RoleBinding    *rbacv1.RoleBinding
	Secrets        []*corev1.Secret
	// Endpoints is the primary's Endpoints <cluster> the operator creates
	// in Endpoints mode (its Service has no selector); nil with
	// ConfigMaps.
	Endpoints   *corev1.Endpoints
	Services    []*corev1.Service
	PDBs        []*policyv1.PodDisruptionBudget
	StatefulSet *appsv1.StatefulSet
}

// zalandoSpiloConfiguration is SPILO_CONFIGURATION as
// generateSpiloJSONConfiguration renders it (spiloConfiguration, in its
// field order) for the resource's spec: postgresql.parameters
// shared_buffers 32MB (local) and max_connections 50 (bootstrap-only),
// and spec.patroni.maximum_lag_on_failover when set.
func zalandoSpiloConfiguration(p ZalandoParams) string {
	type dcs struct {
		MaximumLagOnFailover float32        `json:"maximum_lag_on_failover,omitempty"`
		PGBootstrap          map[string]any `json:"postgresql,omitempty"`
	}
	type bootstrap struct {
		Initdb []any `json:"initdb"`
		DCS    dcs   `json:"dcs,omitempty"`
	}
	var c struct {
		PgLocalConfiguration map[string]any `json:"postgresql"`
		Bootstrap            bootstrap      `json:"bootstrap"`
	}
	c.PgLocalConfiguration = map[string]any{"parameters": map[string]string{"shared_buffers": "32MB"}}
	c.Bootstrap.Initdb = []any{map[string]string{"auth-host": "scram-sha-256"}, map[string]string{"auth-local": "trust"}}
	c.Bootstrap.DCS.MaximumLagOnFailover = float32(p.MaximumLagOnFailover)
	c.Bootstrap.DCS.PGBootstrap = map[string]any{"parameters": map[string]string{"max_connections": "50"}}
	b, _ := json.Marshal(c)
	return string(b)
}

// ZalandoPostgresql is the postgresql resource of the cluster: team acid,
// 3 instances, a 1Gi volume, the PostgreSQL version and parameters of p.
func ZalandoPostgresql(p ZalandoParams) *unstructured.Unstructured {
	spec := map[string]any{
		"teamId":            ZalandoTeam,
		"numberOfInstances": int64(zalandoReplicas),
		"volume":            map[string]any{"size": "1Gi"},
		"postgresql": map[string]any{
			"version":    p.PGVersion,
			"parameters": map[string]any{"shared_buffers": "32MB", "max_connections": "50"},
		},
	}
	if p.MaximumLagOnFailover != 0 {
		spec["patroni"] = map[string]any{"maximum_lag_on_failover": p.MaximumLagOnFailover}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ZalandoAPIVersion,
		"kind":       ZalandoKind,
		"metadata":   map[string]any{"name": p.Name, "namespace": p.Namespace},
		"spec":       spec,
	}}
}

// ZalandoObjects lays out the cluster of p as the operator creates it.
func ZalandoObjects(p ZalandoParams) (*ZalandoLayout, error) {
	if p.Name == "" || p.Namespace == "" || p.PGVersion == "" || p.RunAsUser == 0 || p.SuperPassword == "" || p.StandbyPassword == "" {
		return nil, errors.New("zalando: name, namespace, PostgreSQL version, a non-root user and the passwords are required")
	}
	c, ns := p.Name, p.Namespace
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	out := &ZalandoLayout{Postgresql: ZalandoPostgresql(p)}

	// initPodServiceAccount, initRoleBinding: per namespace, bound to the
	// ClusterRole the administrator creates.
	out.ServiceAccount = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ZalandoPodServiceAccount, Namespace: ns}}
	out.RoleBinding = &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ZalandoPodServiceAccount, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ZalandoPodServiceAccount},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: ZalandoPodServiceAccount, Namespace: ns}},
	}
	dcsVerbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	out.ClusterRole = &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ZalandoPodServiceAccount},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: dcsVerbs},
			{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: dcsVerbs},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create"}},
		},
	}

	for _, u := range [][2]string{{ZalandoSuperUser, p.SuperPassword}, {ZalandoStandbyUser, p.StandbyPassword}} {
		out.Secrets = append(out.Secrets, &corev1.Secret{
			ObjectMeta: meta(ZalandoSecretName(u[0], c), zalandoExtraLabels(c)),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"username": []byte(u[0]), "password": []byte(u[1])},
		})
	}

	// generateService: the primary's has a selector only with ConfigMaps
	// ("no selector for master, see issue #340"); the replicas' always.
	pgPort := []corev1.ServicePort{{Name: "postgresql", Port: 5432, TargetPort: intstr.FromInt32(5432)}}
	master := &corev1.Service{
		ObjectMeta: meta(c, withRole(zalandoExtraLabels(c), ZalandoMaster)),
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: pgPort},
	}
	if p.ConfigMaps {
		master.Spec.Selector = withRole(ZalandoLabels(c), ZalandoMaster)
	} else {
		out.Endpoints = &corev1.Endpoints{ObjectMeta: meta(c, withRole(zalandoExtraLabels(c), ZalandoMaster))}
	}
	repl := &corev1.Service{
		ObjectMeta: meta(ZalandoReplicaService(c), withRole(zalandoExtraLabels(c), ZalandoReplica)),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: append([]corev1.ServicePort(nil), pgPort...),
			Selector: withRole(ZalandoLabels(c), ZalandoReplica)},
	}
	out.Services = []*corev1.Service{master, repl}

	one, none := intstr.FromInt32(1), intstr.FromInt32(0)
	critical := ZalandoLabels(c)
	critical["critical-operation"] = "true"
	out.PDBs = []*policyv1.PodDisruptionBudget{
		{
			ObjectMeta: meta(ZalandoPDBName(c), zalandoExtraLabels(c)),
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
				Selector: &metav1.LabelSelector{MatchLabels: withRole(ZalandoLabels(c), ZalandoMaster)}},
		},
		{
			ObjectMeta: meta(ZalandoCriticalOpPDBName(c), zalandoExtraLabels(c)),
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &none, Selector: &metav1.LabelSelector{MatchLabels: critical}},
		},
	}

	out.StatefulSet = zalandoStatefulSet(p)
	return out, nil
}

func zalandoStatefulSet(p ZalandoParams) *appsv1.StatefulSet {
	c := p.Name
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	secret := func(user string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ZalandoSecretName(user, c)}, Key: "password"}}
	}
	env := []corev1.EnvVar{
		{Name: "SCOPE", Value: c},
		{Name: "PGROOT", Value: ZalandoPGRoot},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "PGUSER_SUPERUSER", Value: ZalandoSuperUser},
		{Name: "KUBERNETES_SCOPE_LABEL", Value: ZalandoClusterNameLabel},
		{Name: "KUBERNETES_ROLE_LABEL", Value: ZalandoRoleLabel},
		{Name: "PGPASSWORD_SUPERUSER", ValueFrom: secret(ZalandoSuperUser)},
		{Name: "PGUSER_STANDBY", Value: ZalandoStandbyUser},
		{Name: "PGPASSWORD_STANDBY", ValueFrom: secret(ZalandoStandbyUser)},
		{Name: "PAM_OAUTH2", Value: "https://info.example.com/oauth2/tokeninfo?access_token= uid realm=/employees"},
		{Name: "HUMAN_ROLE", Value: "zalandos"},
		{Name: "PGVERSION", Value: p.PGVersion},
		{Name: "KUBERNETES_LABELS", Value: `{"application":"spilo"}`},
		{Name: "SPILO_CONFIGURATION", Value: zalandoSpiloConfiguration(p)},
		{Name: "DCS_ENABLE_KUBERNETES_API", Value: "true"},
		{Name: "KUBERNETES_BOOTSTRAP_LABELS", Value: `{"critical-operation":"true"}`},
	}
	if p.ConfigMaps {
		env = append(env, corev1.EnvVar{Name: "KUBERNETES_USE_CONFIGMAPS", Value: "true"})
	}
	no, yes := false, true
	grace := int64(300) // pod_terminate_grace_period 5m
	replicas := int32(zalandoReplicas)
	fs := corev1.PersistentVolumeFilesystem
	tcp := func(port int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP}
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: p.Namespace, Labels: zalandoExtraLabels(c)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: ZalandoLabels(c)},
			ServiceName:         c,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Labels: zalandoExtraLabels(c)},
				Spec: corev1.PodSpec{
					ServiceAccountName:            ZalandoPodServiceAccount,
					TerminationGracePeriodSeconds: &grace,
					SecurityContext:               &corev1.PodSecurityContext{RunAsUser: &p.RunAsUser, RunAsGroup: &p.RunAsGroup, FSGroup: &p.RunAsGroup},
					Containers: []corev1.Container{{
						Name:            "postgres",
						Image:           ZalandoImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("500Mi")},
						},
						Ports: []corev1.ContainerPort{tcp(8008), tcp(5432), tcp(8080)},
						VolumeMounts: []corev1.VolumeMount{
							{Name: ZalandoDataVolume, MountPath: ZalandoDataMount},
							{Name: "dshm", MountPath: "/dev/shm"},
						},
						Env: env,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &yes, Privileged: &no, ReadOnlyRootFilesystem: &no,
						},
						// generateSpiloReadinessProbe (enable_readiness_probe).
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/readiness", Port: intstr.FromInt32(8008), Scheme: corev1.URISchemeHTTP}},
							InitialDelaySeconds: 6, PeriodSeconds: 10, SuccessThreshold: 1, TimeoutSeconds: 5, FailureThreshold: 3,
						},
					}},
					// addShmVolume (enable_shm_volume).
					Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: ZalandoDataVolume, Labels: zalandoExtraLabels(c)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					VolumeMode:  &fs,
				},
			}},
		},
	}
}

// EnsureZalandoCRD creates the operator's postgresql CRD (a minimal
// schema: spec and status preserve unknown fields; names, the status
// subresource and the printer columns as manifests/postgresql.crd.yaml
// declares them) unless it exists, and waits until it is established.
func EnsureZalandoCRD(ctx context.Context, dyn dynamic.Interface) error {
	open := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	col := func(name, typ, path string) map[string]any {
		return map[string]any{"name": name, "type": typ, "jsonPath": path}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":   PostgresqlGVR.Resource + "." + ZalandoGroup,
			"labels": map[string]any{"app.kubernetes.io/name": "postgres-operator"},
		},
		"spec": map[string]any{
			"group": ZalandoGroup,
			"names": map[string]any{
				"kind": ZalandoKind, "listKind": ZalandoKind + "List", "plural": PostgresqlGVR.Resource, "singular": ZalandoKind,
				"shortNames": []any{"pg"}, "categories": []any{"all"},
			},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": ZalandoVersion, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "properties": map[string]any{"spec": open, "status": open},
				}},
				"subresources": map[string]any{"status": map[string]any{}},
				"additionalPrinterColumns": []any{
					col("Team", "string", ".spec.teamId"),
					col("Version", "string", ".spec.postgresql.version"),
					col("Pods", "integer", ".spec.numberOfInstances"),
					col("Volume", "string", ".spec.volume.size"),
					col("CPU-Request", "string", ".spec.resources.requests.cpu"),
					col("Memory-Request", "string", ".spec.resources.requests.memory"),
					col("Age", "date", ".metadata.creationTimestamp"),
					col("Status", "string", ".status.PostgresClusterStatus"),
				},
			}},
		},
	}}
	return createCRD(ctx, dyn, crd)
}

// zalandoPassword is a password as the operator generates them
// (util.RandomPassword: 64 letters and digits).
func zalandoPassword() string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 64)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// zalandoParams are the cluster's parameters in env: the host's postgres
// user and the version of its newest PostgreSQL.
func zalandoParams(env Env, cluster string, configMaps bool) (ZalandoParams, error) {
	uid, gid, bin, err := PostgresUser()
	if err != nil {
		return ZalandoParams{}, err
	}
	return ZalandoParams{
		Name: cluster, Namespace: env.Namespace, ConfigMaps: configMaps,
		PGVersion: filepath.Base(filepath.Dir(bin)), RunAsUser: uid, RunAsGroup: gid,
		SuperPassword: zalandoPassword(), StandbyPassword: zalandoPassword(),
	}, nil
}

// formZalando plays the operator for the cluster of p: the CRD, the
// postgresql resource (status Creating), every object of ZalandoObjects,
// then, once the Patroni cluster has formed (see formPatroni), the status
// Running. It returns the leader and the replicas, sorted.
func formZalando(ctx context.Context, env Env, p ZalandoParams) (leader string, replicas []string, err error) {
	begin := time.Now()
	if env.Dynamic == nil {
		return "", nil, errors.New("the zalando scenarios need a dynamic client")
	}
	if err := EnsureZalandoCRD(ctx, env.Dynamic); err != nil {
		return "", nil, err
	}
	o, err := ZalandoObjects(p)
	if err != nil {
		return "", nil, err
	}
	ri := env.Dynamic.Resource(PostgresqlGVR).Namespace(p.Namespace)
	if _, err := createWithRetry(ctx, ri, o.Postgresql); err != nil {
		return "", nil, fmt.Errorf("creating postgresql %s: %w", p.Name, err)
	}
	status := func(s string) func(*unstructured.Unstructured) map[string]any {
		return func(*unstructured.Unstructured) map[string]any { return map[string]any{"PostgresClusterStatus": s} }
	}
	if err := updateStatus(ctx, ri, p.Name, status("Creating")); err != nil {
		return "", nil, fmt.Errorf("postgresql %s status: %w", p.Name, err)
	}
	kc := env.Kube
	if _, err := kc.RbacV1().ClusterRoles().Create(ctx, o.ClusterRole, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, fmt.Errorf("creating ClusterRole %s: %w", o.ClusterRole.Name, err)
	}
	if _, err := kc.CoreV1().ServiceAccounts(p.Namespace).Create(ctx, o.ServiceAccount, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, fmt.Errorf("creating ServiceAccount %s: %w", o.ServiceAccount.Name, err)
	}
	if _, err := kc.RbacV1().RoleBindings(p.Namespace).Create(ctx, o.RoleBinding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, fmt.Errorf("creating RoleBinding %s: %w", o.RoleBinding.Name, err)
	}
	for _, x := range o.Secrets {
		if _, err := kc.CoreV1().Secrets(p.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, fmt.Errorf("creating Secret %s: %w", x.Name, err)
		}
	}
	if o.Endpoints != nil {
		if _, err := kc.CoreV1().Endpoints(p.Namespace).Create(ctx, o.Endpoints, metav1.CreateOptions{}); err != nil {
			return "", nil, fmt.Errorf("creating Endpoints %s: %w", o.Endpoints.Name, err)
		}
	}
	for _, x := range o.Services {
		if _, err := kc.CoreV1().Services(p.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, fmt.Errorf("creating Service %s: %w", x.Name, err)
		}
	}
	if _, err := kc.AppsV1().StatefulSets(p.Namespace).Create(ctx, o.StatefulSet, metav1.CreateOptions{}); err != nil {
		return "", nil, fmt.Errorf("creating StatefulSet %s: %w", p.Name, err)
	}
	for _, x := range o.PDBs {
		if _, err := kc.PolicyV1().PodDisruptionBudgets(p.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return "", nil, fmt.Errorf("creating PodDisruptionBudget %s: %w", x.Name, err)
		}
	}
	if leader, replicas, err = waitFormed(ctx, env, p.Name, zalandoReplicas, begin); err != nil {
		return "", nil, err
	}
	if err := updateStatus(ctx, ri, p.Name, status(ZalandoStatusRunning)); err != nil {
		return "", nil, fmt.Errorf("postgresql %s status: %w", p.Name, err)
	}
	return leader, replicas, nil
}

// patroniTime is the format of Patroni's lock times.
const patroniTime = "2006-01-02T15:04:05.000000-07:00"

// leaveOrphanedEndpoints writes what Patroni's Endpoints mode left behind
// in a cluster upgraded to ConfigMaps (the operator's docs/migrate.md,
// "K8s Endpoints are deprecated": the Endpoints named like the new
// ConfigMaps are orphaned): the Endpoints <cluster> with the leader lock
// of member 2 (not the leader now), renewed hours ago, <cluster>-config with the cluster's
// configuration and identity (from the ConfigMap <cluster>-config), and
// <cluster>-failover, each with Patroni's labels. The Endpoints
// <cluster> may already exist (the endpoints controller keeps it for the
// primary's Service, which now has a selector): the lock is added to it.
func leaveOrphanedEndpoints(ctx context.Context, env Env, cluster string) error {
	eps := env.Kube.CoreV1().Endpoints(env.Namespace)
	cfg, err := env.Kube.CoreV1().ConfigMaps(env.Namespace).Get(ctx, ZalandoConfigName(cluster), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the ConfigMap %s: %w", ZalandoConfigName(cluster), err)
	}
	then := time.Now().Add(-3 * time.Hour).UTC()
	lock := map[string]string{
		"leader":      MemberName(cluster, 2),
		"acquireTime": then.Format(patroniTime),
		"renewTime":   then.Add(time.Hour).Format(patroniTime),
		"optime":      "67108864",
		"transitions": "0",
		"ttl":         "30",
	}
	config := map[string]string{"config": cfg.Annotations["config"], "initialize": cfg.Annotations["initialize"], "history": "[]"}
	for name, ann := range map[string]map[string]string{
		cluster:                    lock,
		ZalandoConfigName(cluster): config,
		cluster + "-failover":      nil,
	} {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace, Labels: ZalandoLabels(cluster), Annotations: ann}}
		_, err := eps.Create(ctx, ep, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && len(ann) > 0 {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
			_, err = eps.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("leaving the Endpoints %s: %w", name, err)
		}
	}
	env.Logf("scenario %s: orphaned Endpoints %s (leader %s, renewed %s), %s, %s-failover", cluster, cluster,
		lock["leader"], lock["renewTime"], ZalandoConfigName(cluster), cluster)
	return nil
}

// zalandoCluster is the cluster name of zalando scenario name: the
// operator's clusters are named <team>-<name>.
func zalandoCluster(name string) string { return ZalandoTeam + "-" + name }

func init() {
	register(&Scenario{
		Name:    "zalando",
		Cluster: zalandoCluster("zalando"),
		Shape:   ZalandoOperator,
		// The operator's budget covers the primary alone.
		Reasons: []model.ReasonCode{model.ReasonPDBAllowsQuorumLoss},
		Summary: "the Zalando postgres-operator's (v2.0) layout: a postgresql resource acid-zalando (status Running), " +
			"StatefulSet acid-zalando of 3 Spilo pods (Patroni + PostgreSQL), DCS on ConfigMaps (kubernetes_use_configmaps, " +
			"the v2.0 default), Services acid-zalando (selector spilo-role=master) and acid-zalando-repl, PodDisruptionBudgets: " +
			"a leader and 2 replicas streaming from it; upgraded from v1.x, so the Endpoints acid-zalando (a leader lock " +
			"naming member 2, renewed hours ago), -config and -failover of its Endpoints days are left behind (docs/migrate.md)",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			p, err := zalandoParams(env, s.ClusterName(), true)
			if err != nil {
				return err
			}
			if _, _, err := formZalando(ctx, env, p); err != nil {
				return err
			}
			return leaveOrphanedEndpoints(ctx, env, p.Name)
		},
	})
	register(&Scenario{
		Name:    "zalando-endpoints",
		Cluster: zalandoCluster("zalando-endpoints"),
		Shape:   ZalandoOperator,
		// The operator's budget covers the primary alone.
		Reasons: []model.ReasonCode{model.ReasonPDBAllowsQuorumLoss},
		Summary: "the Zalando postgres-operator's layout before v2.0: DCS on Endpoints (the leader lock on the Endpoints " +
			"acid-zalando-endpoints, which the operator creates for its selector-less primary Service; -config and the rest " +
			"Patroni creates), 3 healthy members",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			p, err := zalandoParams(env, s.ClusterName(), false)
			if err != nil {
				return err
			}
			_, _, err = formZalando(ctx, env, p)
			return err
		},
	})
	register(&Scenario{
		Name:    "zalando-endpoints-lock-stale",
		Cluster: zalandoCluster("zalando-endpoints-lock-stale"),
		Shape:   ZalandoOperator,
		Summary: "a Zalando cluster with its DCS on Endpoints in maintenance mode, then the primary's Patroni frozen " +
			"(SIGSTOP; PostgreSQL keeps running): the leader lock on the Endpoints goes stale and the primary's REST API answers nothing, " +
			"while the postgresql still says Running",
		Reasons: []model.ReasonCode{model.ReasonLeaderLockStale, model.ReasonMaintenancePaused, model.ReasonMemberUnreachable,
			model.ReasonPrimaryMissing, model.ReasonCRStatusStale, model.ReasonPDBAllowsQuorumLoss},
		MayAlso: []model.ReasonCode{model.ReasonPodNotReady, model.ReasonClientEndpointsMissing},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			c := s.ClusterName()
			p, err := zalandoParams(env, c, false)
			if err != nil {
				return err
			}
			leader, _, err := formZalando(ctx, env, p)
			if err != nil {
				return err
			}
			if err := setPause(ctx, env, c, leader, true, members(c, zalandoReplicas)...); err != nil {
				return err
			}
			return freezeLeader(ctx, env, c, leader, endpointsLeaderLock)
		},
	})
	register(&Scenario{
		Name:    "zalando-replica-lagging",
		Cluster: zalandoCluster("zalando-replica-lagging"),
		Shape:   ZalandoOperator,
		Summary: "a Zalando cluster on ConfigMaps (spec.patroni.maximum_lag_on_failover 1 MiB) whose first replica's WAL " +
			"replay is stalled while the primary writes 8 MiB of WAL: it receives but replays nothing, 8× maximum_lag_on_failover behind",
		Reasons: []model.ReasonCode{model.ReasonReplicaLagging, model.ReasonPDBAllowsQuorumLoss},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			c := s.ClusterName()
			p, err := zalandoParams(env, c, true)
			if err != nil {
				return err
			}
			p.MaximumLagOnFailover = maximumLagOnFailover
			if _, _, err := formZalando(ctx, env, p); err != nil {
				return err
			}
			return stallReplica(ctx, env, c, members(c, zalandoReplicas))
		},
	})
}
