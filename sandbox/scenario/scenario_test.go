package scenario

import (
	"testing"

	"github.com/hactl-dev/hactl/model"
)

func TestRegistry(t *testing.T) {
	known := map[model.ReasonCode]bool{}
	for _, c := range model.AllReasonCodes() {
		known[c] = true
	}
	for _, n := range Demo {
		if _, err := Get(n); err != nil {
			t.Errorf("demo scenario %q: %v", n, err)
		}
	}
	for _, n := range Names() {
		s, _ := Get(n)
		if s.Name != n || s.Summary == "" || s.run == nil {
			t.Errorf("scenario %q is incomplete", n)
		}
		if _, ok := shapeNames[s.Shape]; !ok {
			t.Errorf("scenario %q has no shape", n)
		}
		for _, r := range append(append([]model.ReasonCode{}, s.Reasons...), s.MayAlso...) {
			if !known[r] {
				t.Errorf("scenario %q names unknown reason code %q", n, r)
			}
		}
	}
	if _, err := Get("nope"); err == nil {
		t.Error("Get accepted an unknown scenario")
	}
}
