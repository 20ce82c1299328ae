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

// Recognises implements engine.Decoder. A Patroni cluster is found by the
// hactl.dev/engine label alone (docs/contract.md): a template that merely
// runs Patroni says nothing of where its DCS keeps the leader lock or
// which label carries the role.
func (Engine) Recognises(model.PodTemplate) bool { return false }

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
