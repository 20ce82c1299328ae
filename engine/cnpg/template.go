package cnpg

import (
	"path"
	"slices"

	"github.com/hactl-dev/hactl/model"
)

// DataDir is where CloudNativePG keeps an instance's data (PGDATA,
// pkg/specs/pods.go).
const DataDir = "/var/lib/postgresql/data/pgdata"

// Container finds the instance manager's container in t: one whose
// command is CloudNativePG's `/controller/manager instance run`.
func Container(t model.PodTemplate) (*model.Container, bool) {
	for i := range t.Containers {
		c := &t.Containers[i]
		args := append(append([]string(nil), c.Command...), c.Args...)
		if len(args) >= 3 && path.Base(args[0]) == "manager" && args[1] == "instance" && args[2] == "run" {
			return c, true
		}
	}
	return nil, false
}

// Recognises implements engine.Decoder: a pod running CloudNativePG's
// instance manager.
func (Engine) Recognises(t model.PodTemplate) bool {
	_, ok := Container(t)
	return ok
}

// Template implements engine.Decoder: the container, its image, the
// status port (a container port named status, else 8000) and the data
// directory (PGDATA).
func (Engine) Template(pt model.PodTemplate) model.TemplateFacts {
	t := model.TemplateFacts{ClientPort: StatusPort, DataDir: DataDir}
	c, ok := Container(pt)
	if !ok {
		return t
	}
	t.Container, t.Image = c.Name, c.Image
	for _, p := range c.Ports {
		if p.Name == "status" {
			t.ClientPort = p.Port
		}
	}
	if v, ok := c.Literal("PGDATA"); ok && v != "" {
		t.DataDir = v
	}
	// The manager serves its status over TLS with --status-port-tls
	// (pkg/specs/pods.go), which `kubectl cnpg status` reads over https.
	t.ClientTLS = slices.Contains(c.Command, "--status-port-tls") || slices.Contains(c.Args, "--status-port-tls")
	return t
}

// ActionTemplate implements engine.Decoder: the operator recreates
// instances, so actions need nothing more of the template.
func (Engine) ActionTemplate(model.PodTemplate, *model.TemplateFacts) {}
