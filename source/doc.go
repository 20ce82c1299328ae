// Package source finds where HA clusters' members come from: a layout
// finds its clusters among the objects one read of the API server
// returned and lists each one's members with their pods and volumes; the
// engine then probes them (package status). A StatefulSet's ordinals
// (StatefulSets) are the layout read today; an operator's pod per custom
// resource and the kubelet's static pods are layouts of the same kind.
// It decodes the Kubernetes objects members are made of (DecodePod,
// PodTemplate) and imports only model.
package source
