package runner

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/spilostandin"
)

// The Zalando postgres-operator's marks on its member pods
// (github.com/zalando/postgres-operator, pkg/util/config/config.go:
// cluster_labels application:spilo) and the image they run (Spilo,
// ghcr.io/zalando/spilo-<major>:<tag>, started without a command).
const (
	SpiloApplicationLabel = "application"
	SpiloApplication      = "spilo"
	// SpiloSelector selects the pods and StatefulSets of the runner's
	// Spilo watch.
	SpiloSelector = SpiloApplicationLabel + "=" + SpiloApplication + ",!" + EngineLabel
	// SpiloMemberQuery is the jq query (a kwok Stage selector's key) that
	// yields something exactly for the pods IsSpiloMember reports:
	// DoesNotExist selects the others.
	SpiloMemberQuery = `select(.metadata.labels["` + SpiloApplicationLabel + `"] == "` + SpiloApplication + `") | ` +
		`.spec.containers[]? | select(((.command // []) | length) == 0) | ` +
		`select(.image | split("@")[0] | split("/") | last | split(":")[0] | test("^spilo-[0-9]+$")) | .name`
)

// IsSpiloMember reports whether the runner plays the kubelet for pod as a
// member of a Zalando postgres-operator cluster: labelled
// application=spilo, with a container of a Spilo image and no command
// (which runs the Spilo stand-in).
func IsSpiloMember(pod *corev1.Pod) bool {
	if pod.Labels[SpiloApplicationLabel] != SpiloApplication {
		return false
	}
	for i := range pod.Spec.Containers {
		if _, ok := spiloStandIn(&pod.Spec.Containers[i]); ok {
			return true
		}
	}
	return false
}

// IsSpiloImage reports whether image is Spilo's: its base name is
// spilo-<PostgreSQL major version>.
func IsSpiloImage(image string) bool {
	v, ok := strings.CutPrefix(model.ImageBase(image), "spilo-")
	if !ok || v == "" {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// spiloStandIn returns the Spilo stand-in's command for container c: one
// of a Spilo image without a command of its own (the image's entrypoint,
// launch.sh, configures and runs Patroni).
func spiloStandIn(c *corev1.Container) (string, bool) {
	if len(c.Command) == 0 && IsSpiloImage(c.Image) {
		return spilostandin.Command, true
	}
	return "", false
}
