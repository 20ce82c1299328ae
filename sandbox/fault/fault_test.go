package fault

import "testing"

func TestEveryKindRoundTrips(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range All() {
		s := k.String()
		if seen[s] {
			t.Fatalf("duplicate name %q", s)
		}
		seen[s] = true
		got, err := Parse(s)
		if err != nil || got != k {
			t.Fatalf("Parse(%q) = %v, %v; want %v", s, got, err, k)
		}
	}
	if len(seen) != len(names) {
		t.Fatalf("All() lists %d kinds, names has %d", len(seen), len(names))
	}
}

func TestParseRejectsUnknown(t *testing.T) {
	if _, err := Parse("explode"); err == nil {
		t.Fatal("Parse accepted an unknown fault")
	}
}
