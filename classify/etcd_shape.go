package classify

import "github.com/hactl-dev/hactl/model"

// DetectShape classifies how a recreated member would boot on an empty
// volume, from the pod template's engine-relevant facts (see
// model.TemplateFacts.Shape).
func DetectShape(t model.TemplateFacts) model.Shape { return t.Shape() }
