package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"charm.land/bubbles/v2/progress"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/internal/format"
)

// progressBar draws a transfer's progress on a terminal, in place, at most
// ten times a second; it draws nothing when off.
type progressBar struct {
	w     io.Writer
	on    bool
	label string
	total int64
	bar   progress.Model
	color bool
	start time.Time

	mu    sync.Mutex
	last  time.Time
	drawn bool
	done  int64
	ended bool
}

func newProgressBar(w io.Writer, on bool, label string, total int64) *progressBar {
	return &progressBar{
		w: w, on: on, label: label, total: total, start: time.Now(),
		bar:   progress.New(progress.WithWidth(30), progress.WithoutPercentage(), progress.WithDefaultBlend()),
		color: os.Getenv("NO_COLOR") == "",
	}
}

func (p *progressBar) update(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = n
	if !p.on || p.ended || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.draw()
}

func (p *progressBar) draw() {
	p.last = time.Now()
	frac := 0.0
	if p.total > 0 {
		frac = min(1, float64(p.done)/float64(p.total))
	}
	bar := p.bar.ViewAs(frac)
	if !p.color {
		bar = ansi.Strip(bar)
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s %s %s", p.label, bar, format.Progress(p.done, p.total, time.Since(p.start)))
	p.drawn = true
}

// finish draws the final state and ends the line.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on || p.ended {
		return
	}
	p.ended = true
	if p.total > 0 && p.done > p.total {
		p.total = p.done
	}
	p.draw()
	fmt.Fprintln(p.w)
}
