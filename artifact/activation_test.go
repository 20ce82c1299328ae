//go:build linux

package artifact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
)

// envCrashHelper holds the JSON crashSpec of a helper process.
const envCrashHelper = "HACTL_ARTIFACT_CRASH_HELPER"

// crashSpec tells the helper process which restore to run and where to
// die.
type crashSpec struct {
	Store      string `json:"store"`
	Generation string `json:"generation"`
	DataDir    string `json:"dataDir"`
	RestoreID  string `json:"restoreID"`
	At         string `json:"at"`
}

// TestRestoreCrashHelper is not a test: it is this binary re-executed to
// run one Restore that SIGKILLs its own process at a crash point.
func TestRestoreCrashHelper(t *testing.T) {
	raw := os.Getenv(envCrashHelper)
	if raw == "" {
		t.Skip("helper process only")
	}
	var h crashSpec
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	artifact.SetCrashHook(func(p string) {
		if p == h.At {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	})
	ctx := context.Background()
	s, err := artifact.OpenStore(ctx, h.Store, artifact.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	_, err = artifact.Restore(ctx, s, h.Generation, artifact.RestoreOptions{DataDir: h.DataDir, RestoreID: h.RestoreID, Replace: true})
	fmt.Fprintf(os.Stderr, "restore returned without reaching crash point %q: %v\n", h.At, err)
	os.Exit(97)
}

// crashRestore runs a Restore in a process of its own and SIGKILLs it at
// crash point at.
func crashRestore(t *testing.T, h crashSpec) {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRestoreCrashHelper$", "-test.short", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashHelper+"="+string(b))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper restore (crash at %s): %v, want killed\n%s", h.At, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper restore (crash at %s) was not SIGKILLed at that point: %v\n%s", h.At, err, out)
	}
}

// previousDirs lists the previous copies beside dataDir.
func previousDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	prev, err := filepath.Glob(dataDir + ".hactl-previous-*")
	if err != nil {
		t.Fatal(err)
	}
	return prev
}

// holding reports the previous copies beside dataDir holding file name
// with content want.
func holding(t *testing.T, dataDir, name, want string) []string {
	t.Helper()
	var out []string
	for _, p := range previousDirs(t, dataDir) {
		if b, err := os.ReadFile(filepath.Join(p, name)); err == nil && string(b) == want {
			out = append(out, p)
		}
	}
	return out
}

// A restore SIGKILLed at any point of its activation, then run again (by
// the same restore or a new one), never loses the data the data directory
// held before: it is kept beside it as a previous copy. The hard case is
// a data directory that holds an earlier restore of the same generation
// plus what the member wrote since.
func TestActivationCrashKeepsPreviousData(t *testing.T) {
	s, url := fileStore(t)
	ctx := deadline(t)
	files := map[string][]byte{"snapshot.db": randBytes(t, 64<<10)}
	publish(t, s, identity("g1"), files)
	const written = "written by the member after restore-a"

	for _, at := range []string{"journaled", "exchanged", "activated"} {
		for _, rerun := range []string{"restore-b", "restore-c"} {
			t.Run(at+"/rerun as "+rerun, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "volume", "data")
				if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
					t.Fatal(err)
				}
				if _, err := artifact.Restore(ctx, s, "g1", artifact.RestoreOptions{DataDir: dir, RestoreID: "restore-a"}); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "written-since"), []byte(written), 0o600); err != nil {
					t.Fatal(err)
				}

				crashRestore(t, crashSpec{Store: url, Generation: "g1", DataDir: dir, RestoreID: "restore-b", At: at})

				res, err := artifact.Restore(ctx, s, "g1", artifact.RestoreOptions{DataDir: dir, RestoreID: rerun, Replace: true})
				if err != nil {
					t.Fatalf("rerun: %v", err)
				}
				if mk, err := artifact.ReadMarker(dir); err != nil || mk.Generation != "g1" || mk.RestoreID != rerun {
					t.Fatalf("after the rerun the data dir holds %+v (%v), want g1 restored by %s", mk, err, rerun)
				}
				if b, err := os.ReadFile(filepath.Join(dir, "snapshot.db")); err != nil || string(b) != string(files["snapshot.db"]) {
					t.Fatalf("after the rerun the data dir lacks the generation's file: %v", err)
				}
				if _, err := os.Stat(filepath.Join(dir, "written-since")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the data dir still holds what was written after restore-a: %v", err)
				}
				kept := holding(t, dir, "written-since", written)
				if len(kept) != 1 {
					var names []string
					for _, p := range previousDirs(t, dir) {
						names = append(names, filepath.Base(p))
					}
					t.Fatalf("the data the directory held before the crashed restore is kept in %d previous copies, want 1 (previous copies: %v; result %+v)", len(kept), names, res)
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), ".data.hactl-staging")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("staging left behind: %v", err)
				}
				if n := len(previousDirs(t, dir)); n > artifact.DefaultKeepPrevious {
					t.Fatalf("%d previous copies kept, want at most %d", n, artifact.DefaultKeepPrevious)
				}
			})
		}
	}
}

// Restore keeps at most DefaultKeepPrevious previous copies, the newest,
// removing older ones only once the new data is active.
func TestRestoreKeepsBoundedPreviousCopies(t *testing.T) {
	s, _ := fileStore(t)
	ctx := deadline(t)
	publish(t, s, identity("g1"), map[string][]byte{"snapshot.db": randBytes(t, 1<<10)})
	dir := filepath.Join(t.TempDir(), "volume", "data")
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	const rounds = 5
	for i := range rounds {
		if _, err := artifact.Restore(ctx, s, "g1", artifact.RestoreOptions{DataDir: dir, RestoreID: fmt.Sprintf("restore-%d", i),
			Replace: true, Now: base.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatalf("restore %d: %v", i, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "round"), []byte(fmt.Sprint(i)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	prev := previousDirs(t, dir)
	if len(prev) != 3 {
		t.Fatalf("%d previous copies kept after %d restores: %v, want the 2 newest and the oldest", len(prev), rounds, prev)
	}
	for _, i := range []int{0, rounds - 3, rounds - 2} { // the oldest, and the data of the two restores before the last
		if len(holding(t, dir, "round", fmt.Sprint(i))) != 1 {
			t.Errorf("the previous copy of round %d is gone; kept: %v", i, prev)
		}
	}
}

// Restore refuses to stage a generation that does not fit in the
// volume's free space, naming the bytes needed and free, and changes
// nothing.
func TestRestoreChecksFreeSpace(t *testing.T) {
	s, _ := fileStore(t)
	ctx := deadline(t)
	publish(t, s, identity("g1"), map[string][]byte{"snapshot.db": randBytes(t, 100<<10)})
	dir := existingDataDir(t)
	before := treeDigest(t, dir)
	defer artifact.SetFreeSpace(func(string) (int64, error) { return 50 << 10, nil })()
	_, err := artifact.Restore(ctx, s, "g1", artifact.RestoreOptions{DataDir: dir, Replace: true})
	if !errors.Is(err, artifact.ErrNoSpace) || !strings.Contains(err.Error(), "102400 bytes") || !strings.Contains(err.Error(), "51200 bytes free") {
		t.Fatalf("restore with 50 KiB free: %v, want ErrNoSpace naming 102400 bytes needed and 51200 bytes free", err)
	}
	if treeDigest(t, dir) != before {
		t.Fatal("the refused restore changed the data directory or what is beside it")
	}
}
