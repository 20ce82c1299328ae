package patroni

import (
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// RESTPort is Patroni's default REST API port.
const RESTPort = 8008

var _ engine.Decoder = Engine{}

// Recognises implements engine.Decoder: a template that runs Patroni
// (Container) with Patroni's Kubernetes DCS, which is what says where the
// leader record is and which pod label carries the role: a PATRONI_KUBERNETES_*
// variable (Patroni's own settings, as Patroni's Kubernetes example sets
// them), or Spilo's DCS_ENABLE_KUBERNETES_API (as Zalando's
// postgres-operator sets it). A Patroni cluster on another DCS
// (etcd, Consul) is found by the hactl.dev/engine label alone.
func (Engine) Recognises(t model.PodTemplate) bool {
	c, ok := Container(t)
	return ok && kubernetesDCS(*c)
}

// kubernetesDCS reports whether c configures Patroni's Kubernetes DCS.
func kubernetesDCS(c model.Container) bool {
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "PATRONI_KUBERNETES_") {
			return true
		}
	}
	return spilo(c)
}

// spilo reports whether c is Spilo's entrypoint configured for the
// Kubernetes DCS (configure_spilo.py: DCS_ENABLE_KUBERNETES_API set to
// anything but ""), whose settings are its own variables (SCOPE,
// KUBERNETES_*), not Patroni's.
func spilo(c model.Container) bool {
	v, ok := c.Literal("DCS_ENABLE_KUBERNETES_API")
	return ok && v != ""
}

// Container finds the container running Patroni in t: one whose command
// or image names patroni or spilo, or that sets PATRONI_* variables.
func Container(t model.PodTemplate) (*model.Container, bool) {
	cs := t.Containers
	for i := range cs {
		c := &cs[i]
		base := model.ImageBase(c.Image)
		if c.Name == "patroni" || base == "patroni" || base == "spilo" || strings.HasPrefix(base, "spilo-") {
			return c, true
		}
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "patroni" {
			return c, true
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "PATRONI_") {
				return c, true
			}
		}
	}
	return nil, false
}

// Template implements engine.Decoder: the container, its image, the REST
// port members are dialled on, and the data directory.
func (Engine) Template(pt model.PodTemplate) model.TemplateFacts {
	t := model.TemplateFacts{ClientPort: RESTPort}
	c, ok := Container(pt)
	if !ok {
		return t
	}
	t.Container, t.Image = c.Name, c.Image
	if v, ok := c.Literal("PATRONI_RESTAPI_LISTEN"); ok {
		if _, port, err := net.SplitHostPort(v); err == nil {
			if n, err := strconv.Atoi(port); err == nil && n > 0 {
				t.ClientPort = n
			}
		}
	}
	for _, p := range c.Ports {
		switch p.Name {
		case "patroni", "restapi", "api", "rest":
			t.ClientPort = p.Port
		}
	}
	if v, ok := c.Literal("PATRONI_POSTGRESQL_DATA_DIR"); ok {
		t.DataDir = v
	}
	return t
}

// ActionTemplate implements engine.Decoder: a Patroni member recreated
// from the template copies its data from the primary, so actions need
// nothing more of it.
func (Engine) ActionTemplate(model.PodTemplate, *model.TemplateFacts) {}
