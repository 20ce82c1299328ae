package scenario

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
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
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
	"github.com/hactl-dev/hactl/sandbox/internal/pki"
)

// etcd-druid (github.com/gardener/etcd-druid, API druid.gardener.cloud
// v1alpha1) cannot be built here (its module is not served), so the
// druid scenarios play it: they create its CRD, an Etcd, and through the
// API every object druid's components render for it (read from
// internal/component/{statefulset,configmap,clientservice,peerservice,
// memberlease,snapshotlease,poddistruptionbudget,role,rolebinding,
// serviceaccount} and api/core/v1alpha1/{helper,constants}.go), then
// write the Etcd's status as druid's health checks compute it
// (internal/health). The StatefulSet is the real controller-manager's; the
// runner plays the kubelet for its pods, running stand-ins for the
// etcd-wrapper and etcd-backup-restore images (sandbox/druidstandin)
// around a real etcd. Nothing carries a label or annotation of hactl's.
const (
	// DruidGroup and DruidVersion are druid's API.
	DruidGroup      = "druid.gardener.cloud"
	DruidVersion    = "v1alpha1"
	DruidAPIVersion = DruidGroup + "/" + DruidVersion
	// DruidEtcdKind is the kind of druid's cluster resource.
	DruidEtcdKind = "Etcd"

	// druid's label keys (api/core/v1alpha1/constants.go) and the value
	// of its managed-by label.
	DruidNameLabel      = "app.kubernetes.io/name"
	DruidManagedByLabel = "app.kubernetes.io/managed-by"
	DruidManagedBy      = "etcd-druid"
	DruidPartOfLabel    = "app.kubernetes.io/part-of"
	DruidComponentLabel = "app.kubernetes.io/component"

	// druid's component names (internal/common/constants.go), the
	// values of DruidComponentLabel.
	DruidComponentStatefulSet   = "etcd-statefulset"
	DruidComponentMemberLease   = "etcd-member-lease"
	DruidComponentSnapshotLease = "etcd-snapshot-lease"
	DruidComponentClientService = "etcd-client-service"
	DruidComponentPeerService   = "etcd-peer-service"
	DruidComponentConfigMap     = "etcd-configmap"
	DruidComponentPDB           = "etcd-pdb"
	DruidComponentRole          = "etcd-role"
	DruidComponentRoleBinding   = "etcd-role-binding"
	DruidComponentSA            = "etcd-service-account"

	// DruidWrapperImage and DruidBackupRestoreImage are the images druid
	// v0.37's image vector (internal/images/images.yaml) names. The runner
	// never pulls them: it runs its stand-ins for them.
	DruidWrapperImage       = "europe-docker.pkg.dev/gardener-project/public/gardener/etcd-wrapper:v0.6.2"
	DruidBackupRestoreImage = "europe-docker.pkg.dev/gardener-project/public/gardener/etcdbrctl:v0.41.2"

	// DruidConfigKey is the key of the ConfigMap <etcd>-config holding
	// the etcd configuration.
	DruidConfigKey = "etcd.conf.yaml"
	// DruidTLSEnabledAnnotation is the member Leases' annotation
	// (backup-restore's heartbeat): whether peer URLs use TLS.
	DruidTLSEnabledAnnotation = "member.etcd.gardener.cloud/tls-enabled"
	// DruidLocalBackupHostPath is druid's default host path of a Local
	// store's buckets (internal/store/store.go).
	DruidLocalBackupHostPath = "/etc/gardener/local-backupbuckets"
	// DruidDeltaSnapshotPeriod is spec.backup.deltaSnapshotPeriod: short,
	// so that the sandbox shows the delta-snap Lease renewing.
	DruidDeltaSnapshotPeriod = 20 * time.Second

	druidReplicas    = 3
	druidClientPort  = 2379
	druidPeerPort    = 2380
	druidBackupPort  = 8080
	druidWrapperPort = 9095
)

// EtcdGVR is druid's Etcd resource.
var EtcdGVR = schema.GroupVersionResource{Group: DruidGroup, Version: DruidVersion, Resource: "etcds"}

// DruidLabels are druid's default labels of every object of etcd
// (GetDefaultLabels): managed-by and part-of; the StatefulSet's selector.
func DruidLabels(etcd string) map[string]string {
	return map[string]string{DruidManagedByLabel: DruidManagedBy, DruidPartOfLabel: etcd}
}

func druidLabels(etcd, component, name string) map[string]string {
	l := DruidLabels(etcd)
	l[DruidComponentLabel] = component
	l[DruidNameLabel] = name
	return l
}

// DruidCASecret, DruidServerSecret and DruidClientSecret are the Secrets
// the Etcd's spec.etcd.clientUrlTls names: the CA (ca.crt), the members'
// serving certificate and the client certificate (tls.crt, tls.key,
// ca.crt).
func DruidCASecret(etcd string) string     { return etcd + "-ca" }
func DruidServerSecret(etcd string) string { return etcd + "-server-tls" }
func DruidClientSecret(etcd string) string { return etcd + "-client-tls" }

// DruidMemberLease is the member Lease of ordinal n (the pod's name).
func DruidMemberLease(etcd string, n int) string { return fmt.Sprintf("%s-%d", etcd, n) }

// DruidFullSnapLease and DruidDeltaSnapLease are the snapshot Leases.
func DruidFullSnapLease(etcd string) string  { return etcd + "-full-snap" }
func DruidDeltaSnapLease(etcd string) string { return etcd + "-delta-snap" }

// DruidPeerService and DruidClientService are the Services' names.
func DruidPeerService(etcd string) string   { return etcd + "-peer" }
func DruidClientService(etcd string) string { return etcd + "-client" }

// DruidConfigMapName is the ConfigMap holding etcd.conf.yaml.
func DruidConfigMapName(etcd string) string { return etcd + "-config" }

// DruidStoreContainer is spec.backup.store.container: the bucket
// directory under DruidLocalBackupHostPath on the pod's node.
func DruidStoreContainer(etcd string) string { return etcd + "-backups" }

// DruidMemberHost is member n's DNS name under the peer Service.
func DruidMemberHost(etcd, ns string, n int) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc", etcd, n, DruidPeerService(etcd), ns)
}

// DruidClientTLS is the TLS configuration of a client of etcd's members in
// ns, from the client Secret (its ca.crt is the members' CA). The members'
// certificate names <etcd>-local, their DNS names and their sandbox
// addresses.
func DruidClientTLS(ctx context.Context, kc kubernetes.Interface, ns, etcd string) (*tls.Config, error) {
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, DruidClientSecret(etcd), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cozystackTLS(s.Data["ca.crt"], s.Data["tls.crt"], s.Data["tls.key"])
}

// DruidOwner is the controller reference to the Etcd (GetAsOwnerReference).
func DruidOwner(etcd string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: DruidAPIVersion, Kind: DruidEtcdKind, Name: etcd, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

func init() {
	register(&Scenario{
		Name:  "druid",
		Shape: DruidOperator,
		Summary: "etcd-druid's layout (Etcd, StatefulSet <name> with the etcd-wrapper and backup-restore containers, " +
			"member and snapshot Leases, client TLS): 3 healthy members, Leases renewed by the backup-restore " +
			"stand-ins, a full snapshot in the Local store, the Etcd's status Ready",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, err := formDruid(ctx, env, s.Name)
			return err
		},
	})
	register(&Scenario{
		Name:  "druid-cr-stale",
		Shape: DruidOperator,
		Summary: "etcd-druid's layout with 2 of its 3 members stopped (no quorum; their Leases no longer renewed) " +
			"while the Etcd's status still says Ready (Quorate) with every member Ready: druid's thresholds are " +
			"minutes, and it does not reconcile here",
		Reasons: []model.ReasonCode{model.ReasonQuorumUnavailable, model.ReasonCRStatusStale},
		MayAlso: []model.ReasonCode{
			model.ReasonMemberUnreachable, model.ReasonPodNotReady, model.ReasonLeaderMissing, model.ReasonLagUnknown,
			model.ReasonClientEndpointsMissing,
		},
		run: runDruidCRStale,
	})
	register(&Scenario{
		Name:  "druid-member-stale",
		Shape: DruidOperator,
		Summary: "etcd-druid's layout, 3 healthy members, but the Etcd's status.members entry of one member carries " +
			"an ID its member does not answer with (that of an earlier incarnation), while its member Lease, renewed " +
			"by its backup-restore stand-in, names its real ID: druid has not reconciled the status since",
		Reasons: []model.ReasonCode{model.ReasonCRMemberMismatch},
		run:     runDruidMemberStale,
	})
}

// druidCluster is one Etcd the scenario plays druid for.
type druidCluster struct {
	env      Env
	name, ns string
	uid      types.UID
	client   *tls.Config
	addrs    []string
}

func (c *druidCluster) logf(format string, args ...any) {
	c.env.Logf("scenario %s: "+format, append([]any{c.name}, args...)...)
}

// EnsureDruidCRDs creates druid's Etcd CRD (a minimal schema: spec and
// status preserve unknown fields; the status and scale subresources and
// printer columns as api/core/v1alpha1/crds/druid.gardener.cloud_etcds.yaml
// declares them) unless it exists, and waits until it is established.
func EnsureDruidCRDs(ctx context.Context, dyn dynamic.Interface) error {
	open := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": EtcdGVR.Resource + "." + DruidGroup},
		"spec": map[string]any{
			"group": DruidGroup,
			"names": map[string]any{"kind": DruidEtcdKind, "listKind": DruidEtcdKind + "List", "plural": "etcds", "singular": "etcd"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": DruidVersion, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "properties": map[string]any{"spec": open, "status": open},
				}},
				"subresources": map[string]any{
					"status": map[string]any{},
					"scale": map[string]any{
						"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
						"labelSelectorPath": ".status.selector",
					},
				},
				"additionalPrinterColumns": []any{
					druidColumn("Ready", "string", ".status.ready", 0),
					druidColumn("Quorate", "string", `.status.conditions[?(@.type=="Ready")].status`, 0),
					druidColumn("All Members Ready", "string", `.status.conditions[?(@.type=="AllMembersReady")].status`, 0),
					druidColumn("Backup Ready", "string", `.status.conditions[?(@.type=="BackupReady")].status`, 0),
					druidColumn("Cluster ID Mismatch", "string", `.status.conditions[?(@.type=="ClusterIDMismatch")].status`, 0),
					druidColumn("Age", "date", ".metadata.creationTimestamp", 0),
					druidColumn("Cluster Size", "integer", ".spec.replicas", 1),
					druidColumn("Current Replicas", "integer", ".status.currentReplicas", 1),
					druidColumn("Ready Replicas", "integer", ".status.readyReplicas", 1),
				},
			}},
		},
	}}
	return createCRD(ctx, dyn, crd)
}

func druidColumn(name, typ, path string, priority int64) map[string]any {
	c := map[string]any{"name": name, "type": typ, "jsonPath": path}
	if priority != 0 {
		c["priority"] = priority
	}
	return c
}

// DruidEtcd is the Etcd resource the scenarios create: 3 replicas, client
// TLS (the CA, server and client Secrets), plaintext peers, a Local
// backup store, a 20 s delta snapshot period, runAsRoot (so druid renders
// no chown init container).
func DruidEtcd(ns, etcd string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": DruidAPIVersion,
		"kind":       DruidEtcdKind,
		"metadata":   map[string]any{"name": etcd, "namespace": ns},
		"spec": map[string]any{
			"replicas":  int64(druidReplicas),
			"selector":  map[string]any{"matchLabels": toAny(DruidLabels(etcd))},
			"labels":    toAny(DruidLabels(etcd)),
			"runAsRoot": true,
			"etcd": map[string]any{
				"clientPort":  int64(druidClientPort),
				"serverPort":  int64(druidPeerPort),
				"wrapperPort": int64(druidWrapperPort),
				"clientUrlTls": map[string]any{
					"tlsCASecretRef":     map[string]any{"name": DruidCASecret(etcd)},
					"serverTLSSecretRef": map[string]any{"name": DruidServerSecret(etcd)},
					"clientTLSSecretRef": map[string]any{"name": DruidClientSecret(etcd)},
				},
			},
			"backup": map[string]any{
				"port": int64(druidBackupPort),
				"store": map[string]any{
					"provider":  "Local",
					"container": DruidStoreContainer(etcd),
					"prefix":    etcd,
				},
				"fullSnapshotSchedule": "*/10 * * * *",
				"deltaSnapshotPeriod":  DruidDeltaSnapshotPeriod.String(),
			},
			"storageCapacity": "1Gi",
		},
	}}
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// druidEtcdConfig is etcd.conf.yaml as druid's configmap component
// renders it (etcdconfig.go), in its field order.
type druidEtcdConfig struct {
	Name                         string              `json:"name"`
	DataDir                      string              `json:"data-dir"`
	Metrics                      string              `json:"metrics"`
	SnapshotCount                int64               `json:"snapshot-count"`
	EnableGRPCGateway            bool                `json:"enable-grpc-gateway"`
	QuotaBackendBytes            int64               `json:"quota-backend-bytes"`
	InitialClusterToken          string              `json:"initial-cluster-token"`
	InitialClusterState          string              `json:"initial-cluster-state"`
	InitialCluster               string              `json:"initial-cluster"`
	AutoCompactionMode           string              `json:"auto-compaction-mode"`
	AutoCompactionRetention      string              `json:"auto-compaction-retention"`
	ListenPeerUrls               string              `json:"listen-peer-urls"`
	ListenClientUrls             string              `json:"listen-client-urls"`
	AdvertisePeerUrls            map[string][]string `json:"initial-advertise-peer-urls"`
	AdvertiseClientUrls          map[string][]string `json:"advertise-client-urls"`
	ClientSecurity               *druidSecurity      `json:"client-transport-security,omitempty"`
	NextClusterVersionCompatible bool                `json:"next-cluster-version-compatible,omitempty"`
}

type druidSecurity struct {
	CertFile       string `json:"cert-file,omitempty"`
	KeyFile        string `json:"key-file,omitempty"`
	ClientCertAuth bool   `json:"client-cert-auth,omitempty"`
	TrustedCAFile  string `json:"trusted-ca-file,omitempty"`
	AutoTLS        bool   `json:"auto-tls"`
}

// DruidEtcdConfig renders etcd.conf.yaml for etcd in ns as druid does:
// name etcd-config (backup-restore substitutes the member's), data dir
// /var/etcd/data/new.etcd, token etcd-cluster, state new, the initial
// cluster of every replica's peer URL, the per-member advertise URL maps,
// client TLS under /var/etcd/ssl, plaintext peers.
func DruidEtcdConfig(ns, etcd string) string {
	var initial []string
	peers, clients := map[string][]string{}, map[string][]string{}
	for i := range druidReplicas {
		pod := DruidMemberLease(etcd, i)
		host := DruidMemberHost(etcd, ns, i)
		initial = append(initial, fmt.Sprintf("%s=http://%s:%d", pod, host, druidPeerPort))
		peers[pod] = []string{fmt.Sprintf("http://%s:%d", host, druidPeerPort)}
		clients[pod] = []string{fmt.Sprintf("https://%s:%d", host, druidClientPort)}
	}
	cfg := druidEtcdConfig{
		Name:                         "etcd-config",
		DataDir:                      "/var/etcd/data/new.etcd",
		Metrics:                      "basic",
		SnapshotCount:                10000,
		QuotaBackendBytes:            8 * 1024 * 1024 * 1024,
		InitialClusterToken:          "etcd-cluster",
		InitialClusterState:          "new",
		InitialCluster:               strings.Join(initial, ","),
		AutoCompactionMode:           "periodic",
		AutoCompactionRetention:      "30m",
		ListenPeerUrls:               fmt.Sprintf("http://0.0.0.0:%d", druidPeerPort),
		ListenClientUrls:             fmt.Sprintf("https://0.0.0.0:%d", druidClientPort),
		AdvertisePeerUrls:            peers,
		AdvertiseClientUrls:          clients,
		NextClusterVersionCompatible: true,
		ClientSecurity: &druidSecurity{
			CertFile: "/var/etcd/ssl/server/tls.crt", KeyFile: "/var/etcd/ssl/server/tls.key",
			ClientCertAuth: true, TrustedCAFile: "/var/etcd/ssl/ca/ca.crt",
		},
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		panic(err) // a fixed struct of strings, maps and numbers
	}
	return string(out)
}

// DruidConfigMap is the ConfigMap <etcd>-config (configmap.go).
func DruidConfigMap(ns, etcd string, uid types.UID) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: DruidConfigMapName(etcd), Namespace: ns,
			Labels:          druidLabels(etcd, DruidComponentConfigMap, DruidConfigMapName(etcd)),
			OwnerReferences: []metav1.OwnerReference{DruidOwner(etcd, uid)},
		},
		Data: map[string]string{DruidConfigKey: DruidEtcdConfig(ns, etcd)},
	}
}

// DruidStatefulSet is the StatefulSet druid's statefulset component
// renders (builder.go) for the Etcd DruidEtcd describes.
func DruidStatefulSet(ns, etcd string, uid types.UID) *appsv1.StatefulSet {
	yes, no := true, false
	root := int64(0)
	replicas := int32(druidReplicas)
	mode := int32(0o640)
	labels := druidLabels(etcd, DruidComponentStatefulSet, etcd)
	podLabels := map[string]string{}
	for k, v := range DruidLabels(etcd) { // spec.labels, then the StatefulSet's
		podLabels[k] = v
	}
	for k, v := range labels {
		podLabels[k] = v
	}
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
	}}
	store := DruidStoreContainer(etcd)
	storeMount := "/root/" + store // MountPathLocalStore: runAsRoot's home
	hostPathType := corev1.HostPathDirectoryOrCreate
	secretVol := func(name, secret string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: &mode}}}
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: etcd, Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{DruidOwner(etcd, uid)},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: DruidLabels(etcd)},
			ServiceName:         DruidPeerService(etcd),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: etcd},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					HostAliases:           []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{etcd + "-local"}}},
					ShareProcessNamespace: &yes,
					ServiceAccountName:    etcd,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsGroup: &root, RunAsNonRoot: &no, RunAsUser: &root, FSGroup: &root,
					},
					Containers: []corev1.Container{
						{
							Name:            "etcd",
							Image:           DruidWrapperImage,
							ImagePullPolicy: corev1.PullIfNotPresent,
							Args: []string{
								"start-etcd",
								fmt.Sprintf("--backup-restore-host-port=%s-local:%d", etcd, druidBackupPort),
								fmt.Sprintf("--etcd-server-name=%s-local", etcd),
								"--backup-restore-tls-enabled=false",
								"--etcd-client-cert-path=/var/etcd/ssl/client/tls.crt",
								"--etcd-client-key-path=/var/etcd/ssl/client/tls.key",
								fmt.Sprintf("--etcd-client-port=%d", druidClientPort),
								fmt.Sprintf("--etcd-wrapper-port=%d", druidWrapperPort),
							},
							ReadinessProbe: &corev1.Probe{
								ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
									Path: "/readyz", Port: intstr.FromInt32(druidWrapperPort), Scheme: corev1.URISchemeHTTP,
								}},
								InitialDelaySeconds: 15, PeriodSeconds: 5, FailureThreshold: 5,
							},
							Ports: []corev1.ContainerPort{
								{Name: "server", Protocol: corev1.ProtocolTCP, ContainerPort: druidPeerPort},
								{Name: "client", Protocol: corev1.ProtocolTCP, ContainerPort: druidClientPort},
							},
							Resources:       requests,
							SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no},
							Env:             []corev1.EnvVar{},
							VolumeMounts: []corev1.VolumeMount{
								{Name: etcd, MountPath: "/var/etcd/data"},
								{Name: "etcd-ca", MountPath: "/var/etcd/ssl/ca"},
								{Name: "etcd-server-tls", MountPath: "/var/etcd/ssl/server"},
								{Name: "etcd-client-tls", MountPath: "/var/etcd/ssl/client"},
							},
						},
						{
							Name:            "backup-restore",
							Image:           DruidBackupRestoreImage,
							ImagePullPolicy: corev1.PullIfNotPresent,
							Args:            DruidBackupRestoreArgs(etcd),
							Ports:           []corev1.ContainerPort{{Name: "server", Protocol: corev1.ProtocolTCP, ContainerPort: druidBackupPort}},
							Env: []corev1.EnvVar{
								{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
								{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
								{Name: "STORAGE_CONTAINER", Value: store},
							},
							Resources:       requests,
							SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no},
							VolumeMounts: []corev1.VolumeMount{
								{Name: etcd, MountPath: "/var/etcd/data"},
								{Name: "etcd-config-file", MountPath: "/var/etcd/config/"},
								{Name: "etcd-ca", MountPath: "/var/etcd/ssl/ca"},
								{Name: "etcd-client-tls", MountPath: "/var/etcd/ssl/client"},
								{Name: "local-backup", MountPath: storeMount},
							},
						},
					},
					Volumes: []corev1.Volume{
						{Name: "etcd-config-file", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: DruidConfigMapName(etcd)},
							Items:                []corev1.KeyToPath{{Key: DruidConfigKey, Path: DruidConfigKey}},
							DefaultMode:          &mode,
						}}},
						secretVol("etcd-ca", DruidCASecret(etcd)),
						secretVol("etcd-server-tls", DruidServerSecret(etcd)),
						secretVol("etcd-client-tls", DruidClientSecret(etcd)),
						{Name: "local-backup", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
							Path: DruidLocalBackupHostPath + "/" + store, Type: &hostPathType,
						}}},
					},
				},
			},
		},
	}
}

// DruidBackupRestoreArgs are the backup-restore container's args as
// getBackupRestoreContainerCommandArgs renders them for DruidEtcd (Local
// store, client TLS, runtime components enabled).
func DruidBackupRestoreArgs(etcd string) []string {
	return []string{
		"server",
		fmt.Sprintf("--server-port=%d", druidBackupPort),
		"--enable-snapshot-lease-renewal=true",
		"--full-snapshot-lease-name=" + DruidFullSnapLease(etcd),
		"--delta-snapshot-lease-name=" + DruidDeltaSnapLease(etcd),
		"--storage-provider=Local",
		"--store-prefix=" + etcd,
		"--schedule=*/10 * * * *",
		"--delta-snapshot-period=" + DruidDeltaSnapshotPeriod.String(),
		"--delta-snapshot-memory-limit=104857600",
		"--garbage-collection-policy=LimitBased",
		"--max-backups=7",
		"--compress-snapshots=true",
		"--compression-policy=gzip",
		"--etcd-snapshot-timeout=15m",
		"--etcd-defrag-timeout=15m",
		"--auto-compaction-mode=periodic",
		"--auto-compaction-retention=30m",
		"--cacert=/var/etcd/ssl/ca/ca.crt",
		"--cert=/var/etcd/ssl/client/tls.crt",
		"--key=/var/etcd/ssl/client/tls.key",
		"--insecure-transport=false",
		"--insecure-skip-tls-verify=false",
		fmt.Sprintf("--endpoints=https://%s-local:%d", etcd, druidClientPort),
		fmt.Sprintf("--service-endpoints=https://%s:%d", DruidClientService(etcd), druidClientPort),
		"--data-dir=/var/etcd/data/new.etcd",
		"--restoration-temp-snapshots-dir=/var/etcd/data/restoration.temp",
		"--snapstore-temp-directory=/var/etcd/data/temp",
		"--etcd-connection-timeout=5m",
		"--use-etcd-wrapper=true",
		"--enable-member-lease-renewal=true",
		"--k8s-heartbeat-duration=10s",
		"--embedded-etcd-quota-bytes=8589934592",
	}
}

// DruidLeases are the Leases druid creates empty for etcd: one member
// Lease per replica and the full and delta snapshot Leases.
func DruidLeases(ns, etcd string, uid types.UID) []*coordinationv1.Lease {
	var out []*coordinationv1.Lease
	lease := func(name, component string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, Labels: druidLabels(etcd, component, name),
			OwnerReferences: []metav1.OwnerReference{DruidOwner(etcd, uid)},
		}}
	}
	for i := range druidReplicas {
		out = append(out, lease(DruidMemberLease(etcd, i), DruidComponentMemberLease))
	}
	return append(out, lease(DruidDeltaSnapLease(etcd), DruidComponentSnapshotLease), lease(DruidFullSnapLease(etcd), DruidComponentSnapshotLease))
}

// DruidServices are the client and peer Services (clientservice.go,
// peerservice.go).
func DruidServices(ns, etcd string, uid types.UID) []*corev1.Service {
	sel := DruidLabels(etcd)
	sel[DruidComponentLabel] = DruidComponentStatefulSet
	port := func(name string, p int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: p, TargetPort: intstr.FromInt32(p)}
	}
	return []*corev1.Service{
		{
			ObjectMeta: metav1.ObjectMeta{
				Name: DruidClientService(etcd), Namespace: ns,
				Labels:          druidLabels(etcd, DruidComponentClientService, DruidClientService(etcd)),
				OwnerReferences: []metav1.OwnerReference{DruidOwner(etcd, uid)},
			},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, Selector: sel,
				Ports: []corev1.ServicePort{port("client", druidClientPort), port("server", druidPeerPort), port("backuprestore", druidBackupPort)},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{
				Name: DruidPeerService(etcd), Namespace: ns,
				Labels:          druidLabels(etcd, DruidComponentPeerService, DruidPeerService(etcd)),
				OwnerReferences: []metav1.OwnerReference{DruidOwner(etcd, uid)},
			},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone, SessionAffinity: corev1.ServiceAffinityNone,
				Selector: sel, PublishNotReadyAddresses: true,
				Ports: []corev1.ServicePort{port("peer", druidPeerPort)},
			},
		},
	}
}

// formDruid lays out etcd's objects as druid does, waits until the
// members formed, the backup-restore stand-ins renewed every member Lease
// with the members' real IDs and took a full snapshot, and writes the
// Etcd's status as druid's health checks compute it.
func formDruid(ctx context.Context, env Env, name string) (*druidCluster, error) {
	if env.Dynamic == nil {
		return nil, errors.New("the sandbox gives no dynamic client")
	}
	if err := EnsureDruidCRDs(ctx, env.Dynamic); err != nil {
		return nil, err
	}
	c := &druidCluster{env: env, name: name, ns: env.Namespace}
	out, err := createWithRetry(ctx, env.Dynamic.Resource(EtcdGVR).Namespace(c.ns), DruidEtcd(c.ns, c.name))
	if err != nil {
		return nil, fmt.Errorf("creating Etcd %s: %w", c.name, err)
	}
	c.uid = out.GetUID()
	for i := range druidReplicas {
		a, err := env.Address(DruidMemberLease(c.name, i))
		if err != nil {
			return nil, err
		}
		c.addrs = append(c.addrs, a)
	}
	if err := c.createSecrets(ctx); err != nil {
		return nil, err
	}
	if err := c.createObjects(ctx); err != nil {
		return nil, err
	}
	if err := waitRollout(ctx, env, c.name); err != nil {
		return nil, err
	}
	ids, err := c.waitFormed(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.waitLeases(ctx, ids); err != nil {
		return nil, err
	}
	if err := c.writeStatus(ctx, ""); err != nil {
		return nil, err
	}
	return c, nil
}

// createSecrets mints the CA, the members' serving certificate (druid's
// users issue it for <etcd>-local, the members' peer-Service names and the
// client Service; here also the members' sandbox addresses, which their
// advertised client URLs are rewritten to) and a client certificate.
func (c *druidCluster) createSecrets(ctx context.Context) error {
	ca, err := pki.NewCA(c.name+"-ca", 10*kubeadmCertValidity)
	if err != nil {
		return err
	}
	dns := []string{
		c.name + "-local", "localhost",
		fmt.Sprintf("*.%s.%s.svc", DruidPeerService(c.name), c.ns), fmt.Sprintf("*.%s.%s.svc.cluster.local", DruidPeerService(c.name), c.ns),
		DruidClientService(c.name), fmt.Sprintf("%s.%s.svc", DruidClientService(c.name), c.ns),
		fmt.Sprintf("%s.%s.svc.cluster.local", DruidClientService(c.name), c.ns),
	}
	for i := range druidReplicas {
		dns = append(dns, DruidMemberHost(c.name, c.ns, i))
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, a := range c.addrs {
		ips = append(ips, net.ParseIP(a))
	}
	srvCert, srvKey, err := ca.Issue(pki.Leaf{
		CN: c.name + "-server", DNS: dns, IPs: ips,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, kubeadmCertValidity)
	if err != nil {
		return err
	}
	cliCert, cliKey, err := ca.Issue(pki.Leaf{CN: c.name + "-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, kubeadmCertValidity)
	if err != nil {
		return err
	}
	if c.client, err = cozystackTLS(ca.CertPEM, cliCert, cliKey); err != nil {
		return err
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: DruidCASecret(c.name), Namespace: c.ns}, Data: map[string][]byte{"ca.crt": ca.CertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: DruidServerSecret(c.name), Namespace: c.ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": srvCert, "tls.key": srvKey, "ca.crt": ca.CertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: DruidClientSecret(c.name), Namespace: c.ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": cliCert, "tls.key": cliKey, "ca.crt": ca.CertPEM}},
	} {
		if _, err := c.env.Kube.CoreV1().Secrets(c.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", s.Name, err)
		}
	}
	return nil
}

// createObjects creates what druid's components create, in the order of
// its component registry: ServiceAccount, Role, RoleBinding, Leases,
// Services, ConfigMap, PodDisruptionBudget, StatefulSet.
func (c *druidCluster) createObjects(ctx context.Context) error {
	kc, ns, owner := c.env.Kube, c.ns, DruidOwner(c.name, c.uid)
	roleName := DruidGroup + ":etcd:" + c.name
	meta := func(name, component, nameLabel string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: druidLabels(c.name, component, nameLabel), OwnerReferences: []metav1.OwnerReference{owner}}
	}
	exists := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	// druid's default (disableEtcdServiceAccountAutomount: false).
	automount := true
	_, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: meta(c.name, DruidComponentSA, c.name), AutomountServiceAccountToken: &automount,
	}, metav1.CreateOptions{})
	if err := exists("ServiceAccount", err); err != nil {
		return err
	}
	_, err = kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: meta(roleName, DruidComponentRole, strings.ReplaceAll(roleName, ":", "-")),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		},
	}, metav1.CreateOptions{})
	if err := exists("Role", err); err != nil {
		return err
	}
	_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: meta(roleName, DruidComponentRoleBinding, strings.ReplaceAll(roleName, ":", "-")),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: roleName},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: c.name, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err := exists("RoleBinding", err); err != nil {
		return err
	}
	for _, l := range DruidLeases(ns, c.name, c.uid) {
		_, err := kc.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{})
		if err := exists("Lease "+l.Name, err); err != nil {
			return err
		}
	}
	for _, s := range DruidServices(ns, c.name, c.uid) {
		_, err := kc.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		if err := exists("Service "+s.Name, err); err != nil {
			return err
		}
	}
	_, err = kc.CoreV1().ConfigMaps(ns).Create(ctx, DruidConfigMap(ns, c.name, c.uid), metav1.CreateOptions{})
	if err := exists("ConfigMap", err); err != nil {
		return err
	}
	minAvailable := intstr.FromInt32(druidReplicas/2 + 1)
	_, err = kc.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: meta(c.name, DruidComponentPDB, c.name),
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: DruidLabels(c.name)}},
	}, metav1.CreateOptions{})
	if err := exists("PodDisruptionBudget", err); err != nil {
		return err
	}
	_, err = kc.AppsV1().StatefulSets(ns).Create(ctx, DruidStatefulSet(ns, c.name, c.uid), metav1.CreateOptions{})
	return exists("StatefulSet", err)
}

func (c *druidCluster) urls() []string {
	var out []string
	for _, a := range c.addrs {
		out = append(out, "https://"+net.JoinHostPort(a, strconv.Itoa(druidClientPort)))
	}
	return out
}

// druidIDs are the members' IDs as they answer, and the leader's.
type druidIDs struct {
	member    []uint64
	cluster   uint64
	leader    uint64
	revisions []int64
}

// waitFormed waits until the members form one cluster of 3 voters, and
// returns their IDs.
func (c *druidCluster) waitFormed(ctx context.Context) (druidIDs, error) {
	for {
		err := kubeadmCheck(ctx, c.urls(), c.client)
		if err == nil {
			var ids druidIDs
			for _, u := range c.urls() {
				cl, err := kubeadmClient([]string{u}, c.client)
				if err != nil {
					return ids, err
				}
				sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				st, err := cl.Status(sctx, u)
				cancel()
				cl.Close()
				if err != nil {
					return ids, err
				}
				ids.member = append(ids.member, st.Header.MemberId)
				ids.cluster, ids.leader = st.Header.ClusterId, st.Leader
			}
			c.logf("3 members formed cluster %x", ids.cluster)
			return ids, nil
		}
		select {
		case <-ctx.Done():
			return druidIDs{}, fmt.Errorf("waiting for one %d-member cluster: %w", druidReplicas, errors.Join(err, ctx.Err()))
		case <-time.After(poll):
		}
	}
}

// DruidHolderIdentity is a member Lease's holderIdentity as
// backup-restore's heartbeat writes it: <member ID>:<cluster ID>:<role>,
// the IDs in lowercase hex without padding.
func DruidHolderIdentity(member, cluster uint64, leader bool) string {
	role := "Member"
	if leader {
		role = "Leader"
	}
	return strconv.FormatUint(member, 16) + ":" + strconv.FormatUint(cluster, 16) + ":" + role
}

// waitLeases waits until every member Lease holds its member's identity
// (any role) and the full-snap Lease a revision.
func (c *druidCluster) waitLeases(ctx context.Context, ids druidIDs) error {
	leases := c.env.Kube.CoordinationV1().Leases(c.ns)
	var last string
	for {
		ok := true
		for i, id := range ids.member {
			l, err := leases.Get(ctx, DruidMemberLease(c.name, i), metav1.GetOptions{})
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			h := ""
			if l.Spec.HolderIdentity != nil {
				h = *l.Spec.HolderIdentity
			}
			prefix := strconv.FormatUint(id, 16) + ":" + strconv.FormatUint(ids.cluster, 16) + ":"
			if !strings.HasPrefix(h, prefix) || l.Spec.RenewTime == nil {
				ok, last = false, fmt.Sprintf("Lease %s holds %q, not %s…", l.Name, h, prefix)
				break
			}
		}
		if ok {
			l, err := leases.Get(ctx, DruidFullSnapLease(c.name), metav1.GetOptions{})
			switch {
			case err != nil:
				ok, last = false, err.Error()
			case l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil:
				ok, last = false, "no full snapshot yet"
			}
		}
		if ok {
			c.logf("every member Lease renewed with its member's ID; a full snapshot taken")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the backup-restore sidecars' Leases (%s): %w", last, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// writeStatus writes the Etcd's status as druid's health checks compute
// it from the Leases (internal/health/etcdmember/check_ready.go: each
// member Ready/LeaseSucceeded with the ID and role of its Lease;
// internal/health/condition: Ready Quorate, AllMembersReady,
// BackupReady, ClusterIDMismatch False, DataVolumesReady) and the
// StatefulSet's replicas. staleMember, when set, is the member (its
// Lease's name) whose entry carries an ID none of the members has, as
// druid last recorded it for an earlier incarnation.
func (c *druidCluster) writeStatus(ctx context.Context, staleMember string) error {
	leases := c.env.Kube.CoordinationV1().Leases(c.ns)
	now := metav1.Now().UTC().Format(time.RFC3339)
	var members []any
	var ids []uint64
	for i := range druidReplicas {
		l, err := leases.Get(ctx, DruidMemberLease(c.name, i), metav1.GetOptions{})
		if err != nil {
			return err
		}
		parts := strings.Split(*l.Spec.HolderIdentity, ":")
		members = append(members, map[string]any{
			"name": l.Name, "id": parts[0], "role": parts[len(parts)-1],
			"status": "Ready", "reason": "LeaseSucceeded", "lastTransitionTime": now,
		})
		id, err := strconv.ParseUint(parts[0], 16, 64)
		if err != nil {
			return fmt.Errorf("Lease %s holds %q: %w", l.Name, *l.Spec.HolderIdentity, err)
		}
		ids = append(ids, id)
	}
	for i, m := range members {
		if m := m.(map[string]any); m["name"] == staleMember {
			m["id"] = strconv.FormatUint(druidWrongID(ids[i], ids), 16)
		}
	}
	sort.Slice(members, func(i, j int) bool {
		return members[i].(map[string]any)["name"].(string) < members[j].(map[string]any)["name"].(string)
	})
	cond := func(typ, status, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message, "lastTransitionTime": now, "lastUpdateTime": now}
	}
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: DruidLabels(c.name)})
	err := updateStatus(ctx, c.env.Dynamic.Resource(EtcdGVR).Namespace(c.ns), c.name, func(cur *unstructured.Unstructured) map[string]any {
		return map[string]any{
			"observedGeneration": cur.GetGeneration(),
			"etcd":               map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": c.name},
			"conditions": []any{
				cond("Ready", "True", "Quorate", "The majority of ETCD members is ready"),
				cond("AllMembersReady", "True", "AllMembersReady", "All members are ready"),
				cond("BackupReady", "True", "BackupSucceeded", "Snapshot backup succeeded"),
				cond("ClusterIDMismatch", "False", "NoClusterIDMismatchDetected", "No cluster ID mismatch detected among ETCD members"),
				cond("DataVolumesReady", "True", "NoWarningsFoundForDataVolumes",
					fmt.Sprintf("No warning events found for PVCs used by StatefulSet %s/%s", c.ns, c.name)),
			},
			"currentReplicas":   int64(druidReplicas),
			"replicas":          int64(druidReplicas),
			"readyReplicas":     int64(druidReplicas),
			"ready":             true,
			"labelSelector":     map[string]any{"matchLabels": toAny(DruidLabels(c.name))},
			"selector":          sel,
			"members":           members,
			"peerUrlTLSEnabled": false,
			// RecordSuccess (internal/controller/utils/etcdstatus.go) after
			// the Etcd's first reconcile.
			"lastOperation": map[string]any{
				"type": "Create", "state": "Succeeded", "description": "Etcd cluster has been successfully reconciled",
				"runID": string(uuid.NewUUID()), "lastUpdateTime": now,
			},
		}
	})
	if err != nil {
		return fmt.Errorf("Etcd %s's status: %w", c.name, err)
	}
	if staleMember != "" {
		c.logf("Etcd status rewritten: Ready (Quorate), all members Ready, %s's entry naming an ID none of the members has", staleMember)
		return nil
	}
	c.logf("Etcd status written: Ready (Quorate), all members Ready")
	return nil
}

// druidWrongID is an ID none of ids is, derived from id.
func druidWrongID(id uint64, ids []uint64) uint64 {
	for w := id ^ 0x5a5a5a5a5a5a5a5a; ; w++ {
		if w != 0 && !slices.Contains(ids, w) {
			return w
		}
	}
}

// runDruidMemberStale forms the cluster, then rewrites the Etcd's status
// with member 1's entry naming an ID none of the members has, and checks
// that it reads back so. Nothing else writes the status (druid does not
// run; the backup-restore stand-ins renew only the Leases), so it stays.
func runDruidMemberStale(ctx context.Context, env Env, s *Scenario) error {
	c, err := formDruid(ctx, env, s.Name)
	if err != nil {
		return err
	}
	stale := DruidMemberLease(c.name, 1)
	if err := c.writeStatus(ctx, stale); err != nil {
		return err
	}
	l, err := c.env.Kube.CoordinationV1().Leases(c.ns).Get(ctx, stale, metav1.GetOptions{})
	if err != nil {
		return err
	}
	answers, _, _ := strings.Cut(*l.Spec.HolderIdentity, ":")
	e, err := c.env.Dynamic.Resource(EtcdGVR).Namespace(c.ns).Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	members, _, _ := unstructured.NestedSlice(e.Object, "status", "members")
	for _, m := range members {
		if m := m.(map[string]any); m["name"] == stale {
			if m["id"] == answers {
				return fmt.Errorf("Etcd %s's member %s still names its ID %s", c.name, stale, answers)
			}
			c.logf("the Etcd's member %s records ID %v; its member answers as %s", stale, m["id"], answers)
			return nil
		}
	}
	return fmt.Errorf("Etcd %s's status lists no member %s", c.name, stale)
}

func runDruidCRStale(ctx context.Context, env Env, s *Scenario) error {
	c, err := formDruid(ctx, env, s.Name)
	if err != nil {
		return err
	}
	for i := 1; i < druidReplicas; i++ {
		if err := env.Break(ctx, DruidMemberLease(c.name, i), fault.Stop, nil); err != nil {
			return err
		}
	}
	c.logf("stopped %s and %s (etcd and backup-restore); the Etcd still says Ready", DruidMemberLease(c.name, 1), DruidMemberLease(c.name, 2))
	u := c.urls()[0]
	for {
		cl, err := kubeadmClient([]string{u}, c.client)
		if err != nil {
			return err
		}
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = cl.Get(gctx, "/quorum-check")
		cancel()
		cl.Close()
		if err != nil {
			c.logf("%s cannot serve a linearizable read: %v", DruidMemberLease(c.name, 0), err)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to lose quorum: %w", DruidMemberLease(c.name, 0), ctx.Err())
		case <-time.After(poll):
		}
	}
}
