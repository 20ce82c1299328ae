package verdict

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// TestReasonCodesDocumented keeps docs/reason-codes.md and
// model.AllReasonCodes in step: every code has a "### code" section whose
// "Impact: `x`" line matches the code's Impact, and the doc documents no
// code that does not exist.
func TestReasonCodesDocumented(t *testing.T) {
	f, err := os.Open("../docs/reason-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	impacts := map[model.ReasonCode]string{} // code -> documented impact
	var current model.ReasonCode
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "### "):
			current = model.ReasonCode(strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "### ")), "`"))
			if _, dup := impacts[current]; dup {
				t.Errorf("%s is documented twice", current)
			}
			impacts[current] = ""
		case strings.HasPrefix(line, "## "):
			current = ""
		case current != "" && impacts[current] == "" && strings.HasPrefix(line, "Impact:"):
			impacts[current] = strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "Impact:")), "`*")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	known := map[model.ReasonCode]bool{}
	for _, c := range model.AllReasonCodes() {
		known[c] = true
		got, ok := impacts[c]
		switch {
		case !ok:
			t.Errorf("reason code %s has no \"### %s\" section in docs/reason-codes.md", c, c)
		case got != c.Impact().String():
			t.Errorf("docs/reason-codes.md gives %s the impact %q, model says %q", c, got, c.Impact())
		}
	}
	for c := range impacts {
		if !known[c] {
			t.Errorf("docs/reason-codes.md documents %q, which is not a reason code", c)
		}
	}
}
