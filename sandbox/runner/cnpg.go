package runner

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
)

// CloudNativePG's marks on its instance pods (cloudnative-pg
// pkg/specs/pods.go: labels cnpg.io/cluster and cnpg.io/podRole=instance,
// controlled by a Cluster of postgresql.cnpg.io; container postgres with
// the command /controller/manager instance run).
const (
	CNPGClusterLabel = cnpgstandin.ClusterLabel
	CNPGPodRoleLabel = cnpgstandin.PodRoleLabel
	CNPGManager      = "/controller/manager"
	CNPGContainer    = "postgres"
	// CNPGSelector selects the pods of the runner's CloudNativePG watch.
	CNPGSelector = CNPGPodRoleLabel + "=" + cnpgstandin.PodRoleInstance + "," + CNPGClusterLabel + ",!" + EngineLabel
	// CNPGInstanceQuery is the jq query (a kwok Stage selector's key)
	// that yields something exactly for the pods IsCNPGInstance reports:
	// DoesNotExist selects the others.
	CNPGInstanceQuery = `select(.metadata.labels["` + CNPGPodRoleLabel + `"] == "` + cnpgstandin.PodRoleInstance + `") | ` +
		`select([.metadata.ownerReferences[]? | select(.controller == true and .kind == "` + cnpgstandin.Kind + `" and ` +
		`(.apiVersion | startswith("` + cnpgstandin.Group + `/")))] | length > 0) | ` +
		`.spec.containers[]? | select(.name == "` + CNPGContainer + `" and ((.command // [])[0] // "") == "` + CNPGManager + `") | .name`
)

// IsCNPGInstance reports whether the runner plays the kubelet for pod as
// an instance of a CloudNativePG Cluster: labelled cnpg.io/podRole=instance
// and cnpg.io/cluster, controlled by a Cluster, with the postgres
// container running cnpg's instance manager (which runs the stand-in of
// package cnpgstandin).
func IsCNPGInstance(pod *corev1.Pod) bool {
	if pod.Labels[CNPGPodRoleLabel] != cnpgstandin.PodRoleInstance || pod.Labels[CNPGClusterLabel] == "" {
		return false
	}
	if _, ok := pod.Labels[EngineLabel]; ok {
		return false
	}
	owned := false
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == cnpgstandin.Kind && filepath.Dir(o.APIVersion) == cnpgstandin.Group {
			owned = true
		}
	}
	if !owned {
		return false
	}
	for i := range pod.Spec.Containers {
		if _, ok := cnpgStandIn(pod, &pod.Spec.Containers[i]); ok {
			return true
		}
	}
	return false
}

// cnpgStandIn returns the stand-in's command for container c of a cnpg
// instance pod: the postgres container whose command is the instance
// manager.
func cnpgStandIn(pod *corev1.Pod, c *corev1.Container) (string, bool) {
	if pod == nil || pod.Labels[CNPGPodRoleLabel] != cnpgstandin.PodRoleInstance {
		return "", false
	}
	if c.Name == CNPGContainer && len(c.Command) > 0 && c.Command[0] == CNPGManager {
		return cnpgstandin.Command, true
	}
	return "", false
}
