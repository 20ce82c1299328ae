package runner

import (
	corev1 "k8s.io/api/core/v1"
)

// Crunchy PGO v5's marks on its PostgreSQL instance pods
// (github.com/CrunchyData/postgres-operator, internal/naming/labels.go:
// LabelData=postgres, LabelInstance; internal/naming/names.go:
// ContainerDatabase), whose database container runs Patroni by its own
// command (internal/patroni/reconcile.go InstancePod: sh -c … patroni
// /etc/patroni).
const (
	PGODataLabel     = "postgres-operator.crunchydata.com/data"
	PGOData          = "postgres"
	PGOInstanceLabel = "postgres-operator.crunchydata.com/instance"
	PGODatabase      = "database"
	// PGOSelector selects the pods and StatefulSets of the runner's PGO
	// watch.
	PGOSelector = PGODataLabel + "=" + PGOData + "," + PGOInstanceLabel + ",!" + EngineLabel
	// PGOMemberQuery is the jq query (a kwok Stage selector's key) that
	// yields something exactly for the pods IsPGOMember reports:
	// DoesNotExist selects the others.
	PGOMemberQuery = `select(.metadata.labels["` + PGODataLabel + `"] == "` + PGOData + `") | ` +
		`select((.metadata.labels["` + PGOInstanceLabel + `"] // "") != "") | ` +
		`.spec.containers[]? | select(.name == "` + PGODatabase + `" and ((.command // []) | length) > 0) | .name`
)

// IsPGOMember reports whether the runner plays the kubelet for pod as an
// instance of a Crunchy PGO v5 cluster: labelled
// postgres-operator.crunchydata.com/data=postgres with an instance label,
// with a database container that has a command. Its containers run as
// any runner-run pod's do: the command as written (sh, then patroni from
// PATH).
func IsPGOMember(pod *corev1.Pod) bool {
	if pod.Labels[PGODataLabel] != PGOData || pod.Labels[PGOInstanceLabel] == "" {
		return false
	}
	if _, ok := pod.Labels[EngineLabel]; ok {
		return false
	}
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == PGODatabase && len(c.Command) > 0 {
			return true
		}
	}
	return false
}
