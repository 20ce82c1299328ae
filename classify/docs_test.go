package classify

import (
	"os"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// TestCodesDocumented keeps docs/actions.md and the codes in step: every
// blocker and note code has a "### code" section, the doc has no section
// for a code that does not exist, and every verb, flow, phase and step
// kind is mentioned.
func TestCodesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/actions.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	sections := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if s, ok := strings.CutPrefix(line, "### "); ok {
			sections[strings.Trim(strings.TrimSpace(s), "`")] = true
		}
	}
	known := map[string]bool{}
	for _, c := range append(append([]model.Code(nil), model.AllBlockerCodes...), model.AllNoteCodes...) {
		known[c.String()] = true
		if !sections[c.String()] {
			t.Errorf("code %s has no \"### %s\" section in docs/actions.md", c, c)
		}
	}
	for s := range sections {
		if !known[s] {
			t.Errorf("docs/actions.md documents %q, which is not a code", s)
		}
	}
	var words []string
	for _, v := range model.AllVerbs {
		words = append(words, v.String())
	}
	for _, f := range model.AllFlows[1:] {
		words = append(words, f.String())
	}
	for _, p := range model.AllActionPhases {
		words = append(words, p.String())
	}
	for _, s := range model.AllStepKinds {
		words = append(words, s.String())
	}
	for _, w := range words {
		if !strings.Contains(doc, "`"+w+"`") && !strings.Contains(doc, " "+w+" ") && !strings.Contains(doc, w+" →") && !strings.Contains(doc, "→ "+w) {
			t.Errorf("docs/actions.md does not mention %q", w)
		}
	}
}
