package cnpg

import (
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// RoleLabel is the pod label CloudNativePG's operator writes each
// instance's role into (pkg/utils/labels_annotations.go), and
// legacyRoleLabel the one it still writes beside it.
const (
	RoleLabel       = "cnpg.io/instanceRole"
	legacyRoleLabel = "role"
)

var _ engine.Keeper = Engine{}

// Keep implements engine.Keeper: CloudNativePG keeps nothing of its own
// beside its Cluster (which the layout reads); the role label is
// cnpg.io/instanceRole, primary meaning the primary, and the operator
// rewrites both role labels on its pods, which pod fences leave out.
func (Engine) Keep(_ model.PodTemplate, _ model.APIObjects, c *model.ClusterFacts) model.Kept {
	c.SelfWritten = &model.SelfWritten{Labels: []string{RoleLabel, legacyRoleLabel}}
	return model.Kept{RoleLabel: RoleLabel, PrimaryRoles: []string{"primary"}}
}
