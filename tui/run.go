package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// Options run the TUI as a program.
type Options struct {
	Config
	Deps
	// In and Out are the terminal (the program puts it in raw mode and
	// the alternate screen while it runs).
	In  io.Reader
	Out io.Writer
	// Env is the environment the colour profile is detected from
	// (NO_COLOR, TERM, COLORTERM).
	Env []string
	// Width and Height, when set, are the initial window size (for
	// output that is not a terminal, which reports none).
	Width, Height int
	// Log receives klog output (client-go's logging) while the TUI runs,
	// so nothing scribbles over the screen; nil discards it.
	Log io.Writer
}

// frameRate bounds redraws per second: a screen the model changed is
// drawn at the renderer's next tick, so a frame waits up to 1/frameRate
// (the first screen too). The renderer wakes this often even when idle:
// BenchmarkTUIIdleCPU measured 0.43 % of a core at 20 frames a second,
// 0.83 % at 60 and 1.17 % at 120, without probes. 60 (bubbletea's own
// default) takes about 17 ms off the average wait of every frame against
// 20, for 0.4 % of a core.
const frameRate = 60

// ErrNoBackend is returned by Run without a Backend.
var ErrNoBackend = errors.New("tui: no backend")

// Run runs the TUI until the user quits or ctx is done.
func Run(ctx context.Context, o Options) error {
	if o.Backend == nil {
		return ErrNoBackend
	}
	restore := RouteKlog(o.Log)
	defer restore()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(frameRate)}
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	if o.Out != nil {
		opts = append(opts, tea.WithOutput(o.Out))
	}
	if (o.Out == nil || o.Out == os.Stdout) && (o.Env == nil || slices.Equal(o.Env, os.Environ())) {
		// lipgloss detected stdout's colour profile when it loaded; in
		// tmux detecting it again means running `tmux info` once more
		// before the first frame.
		opts = append(opts, tea.WithColorProfile(lipgloss.Writer.Profile))
	}
	if o.Env != nil {
		opts = append(opts, tea.WithEnvironment(o.Env))
	}
	if o.Width > 0 && o.Height > 0 {
		opts = append(opts, tea.WithWindowSize(o.Width, o.Height))
	}
	m := New(ctx, o.Config, o.Deps)
	// The first read starts now, not once the program has set the
	// terminal up: the first screen comes sooner.
	m.prefetch = m.startDirect()
	p := tea.NewProgram(m, opts...)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("running the TUI: %w", err)
	}
	return nil
}

// RouteKlog sends klog's output (every severity, structured or not) to w,
// discarding it when w is nil, until the returned function restores klog's
// own output. While routed, nothing of klog reaches stderr.
func RouteKlog(w io.Writer) (restore func()) {
	if w == nil {
		w = io.Discard
	}
	var mu sync.Mutex
	klog.Flush()
	klog.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if prefix != "" {
			fmt.Fprintln(w, prefix, args)
			return
		}
		fmt.Fprintln(w, args)
	}, funcr.Options{}))
	return func() {
		klog.Flush()
		klog.ClearLogger()
	}
}
