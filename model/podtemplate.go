package model

import (
	"path"
	"strings"
)

// PodTemplate is what a cluster's members run, as its workload declares
// it (a StatefulSet's pod template): what status decodes from the API
// server and the engines' decoders read (engine.Decoder), so that an
// engine recognises its own containers and decodes their flags without
// reading API objects itself.
type PodTemplate struct {
	// Namespace is the workload's namespace (what $(POD_NAMESPACE)-style
	// references to metadata.namespace resolve to).
	Namespace string
	// Owner is the workload's controlling owner ("Kind/name"), "" when
	// none.
	Owner string
	// Labels are the pods' labels.
	Labels     map[string]string
	Containers []Container
	// Claims are the names of the volume claim templates, the volumes
	// every member gets of its own.
	Claims []string
}

// Container is one container of a PodTemplate.
type Container struct {
	Name, Image   string
	Command, Args []string
	Env           []EnvVar
	Ports         []ContainerPort
	Mounts        []VolumeMount
	// PreStop is the preStop hook's exec command, nil when none.
	PreStop []string
}

// EnvVar is one environment variable of a container: a literal Value,
// or a reference (Ref).
type EnvVar struct {
	Name, Value string
	// Ref is "" for a literal value, "metadata.namespace" for a field
	// reference to the pod's namespace, and "other" for any other
	// reference (a Secret, a ConfigMap, another field).
	Ref string
	// Secret is the Secret key the value comes from (Ref "other"), nil
	// for any other value.
	Secret *SecretKeyRef
}

// SecretKeyRef names one key of a Secret in the workload's namespace.
type SecretKeyRef struct {
	Secret string `json:"secret"`
	Key    string `json:"key"`
}

// Reference kinds of EnvVar.Ref.
const (
	EnvRefNamespace = "metadata.namespace"
	EnvRefOther     = "other"
)

// ContainerPort is a named container port.
type ContainerPort struct {
	Name string
	Port int
}

// VolumeMount is a container's mount of volume Name at Path.
type VolumeMount struct {
	Name, Path, SubPath string
}

// Container is the template's container called name, nil when none.
func (t PodTemplate) Container(name string) *Container {
	for i := range t.Containers {
		if t.Containers[i].Name == name {
			return &t.Containers[i]
		}
	}
	return nil
}

// Argv is the container's command followed by its arguments.
func (c Container) Argv() []string {
	return append(append([]string(nil), c.Command...), c.Args...)
}

// Literal is the literal value of the container's variable name ("",
// false when it is unset or comes from a reference).
func (c Container) Literal(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.Ref == "" {
			return e.Value, true
		}
	}
	return "", false
}

// ImageBase is the last path element of an image reference without its
// tag or digest ("registry.k8s.io/etcd:3.6.16-0" → "etcd").
func ImageBase(image string) string {
	repo := image
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	base := path.Base(repo)
	if i := strings.Index(base, ":"); i >= 0 {
		base = base[:i]
	}
	return base
}

// APIObjects are the objects of a cluster's namespace an engine's keeper
// reads beside its workload (engine.Keeper): what the engine itself keeps
// in the API server.
type APIObjects interface {
	// ConfigMap is the annotations of ConfigMap name; ok is false when
	// there is none.
	ConfigMap(name string) (annotations map[string]string, ok bool)
	// Err says why the ConfigMaps could not be read, nil when they were.
	Err() error
	// Endpoints is the annotations of the v1 Endpoints name (Patroni's
	// DCS keeps them there in its Endpoints mode); ok is false when
	// there is none.
	Endpoints(name string) (annotations map[string]string, ok bool)
	// EndpointsErr says why the Endpoints could not be read, nil when
	// they were.
	EndpointsErr() error
}

// Kept is what an engine's keeper says of a cluster's pods beside its own
// facts.
type Kept struct {
	// RoleLabel is the pod label each member writes its role into, ""
	// when none; PrimaryRoles are its values that mean the primary: a
	// Service selecting the cluster's pods with one of them is the
	// cluster's client endpoint.
	RoleLabel    string
	PrimaryRoles []string
	// PrimaryService is a Service without a selector whose endpoints
	// the engine writes itself with the primary's address (Patroni's
	// Endpoints mode: the Service <scope>), "" when none: it is then the
	// cluster's client endpoint.
	PrimaryService string
}
