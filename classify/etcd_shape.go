package classify

import "github.com/hactl-dev/hactl/model"

// DetectShape classifies how a recreated member would boot on an empty
// volume, from the pod template's engine-relevant facts.
//
// The order matters: ownership by an operator trumps everything (hactl only
// diagnoses such clusters), a self-registering entrypoint is recognised
// before the literal state flag (its scripts pass "new" only while the
// cluster forms), and a hard-coded "new" outranks a plain "existing".
func DetectShape(t model.TemplateFacts) model.Shape {
	switch {
	case t.OperatorOwner != "" || t.BackupSidecar:
		return model.ShapeOperatorOwned
	case t.SelfRegistering:
		return model.ShapeSelfRegistering
	case t.InitialClusterState == "new":
		return model.ShapeStaticNew
	case t.ShellWrapper || t.PreStopCallsEngineCLI:
		// A wrapper we do not recognise may call member add/remove on its
		// own: acting alongside it is unsafe.
		return model.ShapeUnknown
	case t.InitialClusterState == "existing":
		return model.ShapeStaticExisting
	}
	return model.ShapeUnknown
}
