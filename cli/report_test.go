package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestNewestKeepsTheEndOfALog: a log longer than the limit keeps its
// newest whole lines and says how much went before them; a short one is
// kept whole.
func TestNewestKeepsTheEndOfALog(t *testing.T) {
	var log strings.Builder
	for i := range 1000 {
		log.WriteString(strings.Repeat("x", 90) + " line " + string(rune('a'+i%26)) + "\n")
	}
	in := log.String()
	b, cut, err := newest(strings.NewReader(in), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 10_000 || !strings.HasSuffix(in, string(b)) || int(cut)+len(b) != len(in) || !bytes.HasPrefix(b, []byte(strings.Repeat("x", 90))) {
		t.Fatalf("kept %d bytes, cut %d of %d; starts %q", len(b), cut, len(in), b[:20])
	}
	b, cut, err = newest(strings.NewReader("short\n"), 10_000)
	if err != nil || cut != 0 || string(b) != "short\n" {
		t.Fatalf("%q %d %v", b, cut, err)
	}
}
