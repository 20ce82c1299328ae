package classify

import (
	"testing"

	"github.com/hactl-dev/hactl/model"
)

func TestDetectShape(t *testing.T) {
	base := model.TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379}
	cases := []struct {
		name   string
		mutate func(*model.TemplateFacts)
		want   model.Shape
	}{
		{"static existing", func(*model.TemplateFacts) {}, model.ShapeStaticExisting},
		{"static new (upstream guide, kamaji)", func(t *model.TemplateFacts) { t.InitialClusterState = "new" }, model.ShapeStaticNew},
		{"self-registering wins over literal new", func(t *model.TemplateFacts) {
			t.InitialClusterState = "new"
			t.SelfRegistering = true
			t.ShellWrapper = true
		}, model.ShapeSelfRegistering},
		{"operator owner", func(t *model.TemplateFacts) { t.OperatorOwner = "EtcdCluster/main" }, model.ShapeOperatorOwned},
		{"backup sidecar", func(t *model.TemplateFacts) { t.BackupSidecar = true }, model.ShapeOperatorOwned},
		{"unknown shell wrapper", func(t *model.TemplateFacts) { t.ShellWrapper = true }, model.ShapeUnknown},
		{"preStop calls etcdctl", func(t *model.TemplateFacts) { t.PreStopCallsEngineCLI = true }, model.ShapeUnknown},
		{"no state flag", func(t *model.TemplateFacts) { t.InitialClusterState = "" }, model.ShapeUnknown},
	}
	seen := map[model.Shape]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tf := base
			c.mutate(&tf)
			if got := DetectShape(tf); got != c.want {
				t.Fatalf("DetectShape = %s, want %s", got, c.want)
			}
		})
		seen[c.want] = true
	}
	for _, s := range model.AllShapes {
		if !seen[s] {
			t.Errorf("no row produces shape %s", s)
		}
	}
}
