package remedy

import (
	"os"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

// The embedded copy must be the document itself; run `go generate` after
// editing docs/reason-codes.md.
func TestEmbeddedCopyIsCurrent(t *testing.T) {
	want, err := os.ReadFile("../../../docs/reason-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != document {
		t.Fatal("tui/internal/remedy/reason-codes.md differs from docs/reason-codes.md; run: go generate ./tui/internal/remedy")
	}
}

func TestEveryReasonCodeHasSummaryAndFix(t *testing.T) {
	b := Load()
	for _, c := range model.AllReasonCodes() {
		e, ok := b.Lookup(c)
		if !ok {
			t.Errorf("%s: not in the document", c)
			continue
		}
		if e.Impact != c.Impact().String() {
			t.Errorf("%s: document says impact %q, code says %q", c, e.Impact, c.Impact())
		}
		if e.Summary == "" {
			t.Errorf("%s: no summary paragraph", c)
		}
		if len(e.Fix) == 0 || b.FixText(c) == "" {
			t.Errorf("%s: no Fix paragraph", c)
		}
	}
}

func TestParse(t *testing.T) {
	doc := "# Title\n\nintro\n\n### some_code\n\nImpact: `failover`\n\nIt means\nthis.\n\nConfirm: look.\n\nFix: do\nthat:\n\n```sh\nkubectl get pods\n```\n\nThen wait.\n\n## Next section\n\nFix: not part of it\n"
	b := Parse(doc)
	e, ok := b.Lookup("some_code")
	if !ok {
		t.Fatal("entry missing")
	}
	if e.Impact != "failover" || e.Summary != "It means this." {
		t.Errorf("entry = %+v", e)
	}
	want := "do that:\n\n    kubectl get pods\n\nThen wait."
	if got := b.FixText("some_code"); got != want {
		t.Errorf("FixText = %q, want %q", got, want)
	}
	if _, ok := b.Lookup("Next section"); ok {
		t.Error("a level-2 heading became an entry")
	}
	if b.FixText("absent") != "" {
		t.Error("unknown code has a remedy")
	}
	if strings.Contains(b.FixText("some_code"), "not part") {
		t.Error("remedy ran past the next heading")
	}
}
