package picker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/tui/components/picker"
	"github.com/hactl-dev/hactl/tui/internal/common"
	"github.com/hactl-dev/hactl/tui/internal/tuitest"
)

// lines are the picker drawn 80×20, on one line.
func lines(p picker.Model) string { return ansi.Strip(strings.Join(p.Lines(80, 20, "etcd-a"), " ")) }

// The picker offers the published generations newest first, says how
// many partial ones it left out, and its cursor selects one.
func TestOffersPublishedNewestFirst(t *testing.T) {
	p := picker.New(common.NewTheme(true), tuitest.Clock, false)
	if f := lines(p); p.Listed() || !strings.Contains(f, "listing the seed generations") {
		t.Errorf("before a listing: listed %v\n%s", p.Listed(), f)
	}
	p.SetGenerations(tuitest.RestoreGens(), nil)
	var ids []string
	for _, g := range p.Offered() {
		ids = append(ids, g.ID)
	}
	if got := strings.Join(ids, " "); got != "etcd-a-new etcd-a-old" {
		t.Errorf("offered %s, want etcd-a-new etcd-a-old", got)
	}
	if f := lines(p); !strings.Contains(f, "1 partial generation not offered") || strings.Contains(f, "etcd-a-partial") {
		t.Errorf("the partial generation is offered or not accounted for:\n%s", f)
	}
	if g, ok := p.Selected(); !ok || g.ID != "etcd-a-new" {
		t.Errorf("selected %q, want etcd-a-new", g.ID)
	}
	p = p.Update(tuitest.KeyMsg("down"))
	if g, ok := p.Selected(); !ok || g.ID != "etcd-a-old" {
		t.Errorf("after down, selected %q, want etcd-a-old", g.ID)
	}
}

// With nothing to pick, the picker says why.
func TestSaysWhyNothingIsOffered(t *testing.T) {
	p := picker.New(common.NewTheme(true), tuitest.Clock, true)
	if f := lines(p); !strings.Contains(f, "kubectl hactl restore etcd-a --generation G") {
		t.Errorf("unlisted:\n%s", f)
	}
	p = picker.New(common.NewTheme(true), tuitest.Clock, false)
	p.SetGenerations(nil, errors.New("s3: AccessDenied"))
	if f := lines(p); !strings.Contains(f, "Cannot list the seed generations") || !strings.Contains(f, "AccessDenied") {
		t.Errorf("a failed listing:\n%s", f)
	}
	p.SetGenerations(tuitest.RestoreGens()[1:2], nil)
	if _, ok := p.Selected(); ok || !strings.Contains(lines(p), "No published seed generation of etcd-a") {
		t.Errorf("only a partial generation:\n%s", lines(p))
	}
}
