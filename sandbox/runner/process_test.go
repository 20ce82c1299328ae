package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hactl-dev/hactl/sandbox/internal/reap"
)

// TestTrackInSessionZero: a runner started by init, or inside a pid
// namespace whose session leader it cannot see, runs in session 0. That
// is a session like any other: an escapee that left it is recorded.
func TestTrackInSessionZero(t *testing.T) {
	self, err := reap.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		sid    int
		record bool
	}{
		{"session 0", 0, true},
		{"session 1234", 1234, true},
		{"session unknown", -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &process{pid: 1 << 30, sid: c.sid, pidFile: filepath.Join(dir, "main"+reap.PidFileSuffix),
				done: make(chan struct{}), escaped: map[int]reap.Stat{}}
			main := reap.Stat{Pid: p.pid, PPid: 1, PGid: p.pid, Session: c.sid, State: "S", Start: 1}
			// The escapee is this test process (the pid file records a
			// live process), in a session of its own.
			esc := self
			esc.PPid, esc.Session = main.Pid, 4242
			p.track([]reap.Stat{main, esc})
			_, got := p.escaped[esc.Pid]
			if got != c.record {
				t.Fatalf("escapee recorded: %v, want %v", got, c.record)
			}
			_, err := os.Stat(p.escapeeFile(esc.Pid))
			if (err == nil) != c.record {
				t.Fatalf("escapee pid file: %v, want it written: %v", err, c.record)
			}
		})
	}
}
