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
	opts := programOptions(ctx, o.In, o.Out, o.Env, o.Width, o.Height)
	m := New(ctx, o.Config, o.Deps)
	// The first read starts now, not once the program has set the
	// terminal up: the first screen comes sooner.
	m.feed.StartDirect()
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

// programOptions are a program's options on the terminal in, out and env
// (nil: the process's), of size w×h when both are set (tests).
func programOptions(ctx context.Context, in io.Reader, out io.Writer, env []string, w, h int) []tea.ProgramOption {
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(frameRate)}
	if in != nil {
		opts = append(opts, tea.WithInput(in))
	}
	if out != nil {
		opts = append(opts, tea.WithOutput(out))
	}
	if (out == nil || out == os.Stdout) && (env == nil || slices.Equal(env, os.Environ())) {
		// lipgloss detected stdout's colour profile when it loaded; in
		// tmux detecting it again means running `tmux info` once more
		// before the first frame.
		opts = append(opts, tea.WithColorProfile(lipgloss.Writer.Profile))
	}
	if env != nil {
		opts = append(opts, tea.WithEnvironment(env))
	}
	if w > 0 && h > 0 {
		opts = append(opts, tea.WithWindowSize(w, h))
	}
	return opts
}

// klogRoutes counts the RouteKlog calls not restored yet: only the
// outermost routes and restores (the fleet view routes klog once for all
// the programs it runs, so nothing reaches stderr between two of them).
var klogRoutes struct {
	sync.Mutex
	depth int
}

// RouteKlog sends klog's output (every severity, structured or not) to w,
// discarding it when w is nil, until the returned function restores klog's
// own output. While routed, nothing of klog reaches stderr. A call while
// klog is routed already changes nothing (its restore neither).
func RouteKlog(w io.Writer) (restore func()) {
	klogRoutes.Lock()
	defer klogRoutes.Unlock()
	klogRoutes.depth++
	restore = func() {
		klogRoutes.Lock()
		defer klogRoutes.Unlock()
		if klogRoutes.depth--; klogRoutes.depth == 0 {
			klog.Flush()
			klog.ClearLogger()
		}
	}
	if klogRoutes.depth > 1 {
		return restore
	}
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
	return restore
}
