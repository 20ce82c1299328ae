package tui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata/")

// now is the fixed clock of the component tests.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

const testClusterID = "8e9e05c52164694d"

func memberID(i int) string { return fmt.Sprintf("%016x", 0x1a2b3c4d5e6f7081*uint64(i+3)) }

func peers(name string, n int) []model.Peer {
	out := make([]model.Peer, n)
	for i := range out {
		m := fmt.Sprintf("%s-%d", name, i)
		out[i] = model.Peer{ID: memberID(i), Name: m, PeerURLs: []string{fmt.Sprintf("http://%s.%s-headless.db.svc:2380", m, name)}}
	}
	return out
}

func initialCluster(name string, n int) []model.InitialClusterEntry {
	var out []model.InitialClusterEntry
	for _, p := range peers(name, n) {
		out = append(out, model.InitialClusterEntry{Name: p.Name, PeerURL: p.PeerURLs[0]})
	}
	return out
}

// healthyObs is a failover-ready 3-member etcd cluster led by member 0.
func healthyObs(ns, name string) model.Observation {
	obs := model.Observation{
		At: now,
		Cluster: model.ClusterFacts{
			Namespace: ns, Name: name, Engine: etcdengine.Name, UID: "sts-" + name, ResourceVersion: "1000",
			Replicas: 3, ReadyReplicas: 3, CreatedAt: now.Add(-24 * time.Hour), ServiceName: name + "-headless",
			Template: model.TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379,
				Container: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0", InitialClusterDecoded: true, InitialCluster: initialCluster(name, 3)},
			Shape: model.ShapeStaticExisting,
		},
		PDB:             &model.PDBFacts{Name: name, MinAvailable: -1, MaxUnavailable: 1},
		ClientEndpoints: &model.EndpointFacts{Service: name, Ready: 3, Total: 3},
		EngineProbed:    true,
	}
	for i := range 3 {
		pod := fmt.Sprintf("%s-%d", name, i)
		e := &model.EngineFacts{
			Reachable: true, MemberID: memberID(i), ClusterID: testClusterID, LeaderID: memberID(0),
			RaftTerm: 7, RaftIndex: 5000, RaftApplied: 4990, Version: "3.6.16", Peers: peers(name, 3), ProbedAt: now,
		}
		if i == 0 {
			e.RaftApplied = 5000
		}
		obs.Members = append(obs.Members, model.Member{
			Name: pod, Ordinal: i,
			Pod: &model.PodFacts{
				Name: pod, UID: "uid-" + pod, ResourceVersion: "100", Node: fmt.Sprintf("node-%c", 'a'+i), Phase: "Running",
				Started: true, Running: true, Ready: true, EverStarted: true, CreatedAt: now.Add(-90 * time.Minute),
			},
			PVC:    &model.PVCFacts{Name: "data-" + pod, UID: "pvc-" + pod, ResourceVersion: "55", Phase: "Bound"},
			Engine: e,
		})
	}
	return obs
}

// degradedObs: member 2's container runs but is not ready and does not
// answer.
func degradedObs(ns, name string) model.Observation {
	o := healthyObs(ns, name)
	m := &o.Members[2]
	m.Pod.Ready = false
	m.Pod.Restarts = 4
	m.Engine = &model.EngineFacts{Err: "dial: connection refused", Failure: model.ProbeFailureConnect, ProbedAt: now}
	o.ClientEndpoints.Ready = 2
	o.Events = []model.EventFacts{
		{Type: "Warning", Reason: "Unhealthy", Object: "Pod/" + m.Name, Message: "Readiness probe failed: connection refused", Count: 12, Last: now.Add(-time.Minute)},
	}
	return o
}

// learnerObs: member 2 is a learner 4000 entries behind.
func learnerObs(ns, name string) model.Observation {
	o := healthyObs(ns, name)
	e := o.Members[2].Engine
	e.IsLearner = true
	e.RaftApplied = 1000
	for i := range o.Members {
		for j := range o.Members[i].Engine.Peers {
			if j == 2 {
				o.Members[i].Engine.Peers[j].IsLearner = true
			}
		}
	}
	return o
}

func evaluate(o model.Observation) status.Result {
	return status.Evaluate(o, now, judged(model.VerdictOptions{}))
}

// newTestModel is a model at 80x24 holding results, with no backend.
func newTestModel(t *testing.T, cfg Config, deps Deps, obs ...model.Observation) Model {
	t.Helper()
	cfg.Now = clock
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = 5 * time.Second
	}
	cfg.Probes = true
	cfg.Verdict = judged(cfg.Verdict)
	if cfg.Views == nil {
		cfg.Views = cfgViews
	}
	m := New(context.Background(), cfg, deps)
	var rs []status.Result
	for _, o := range obs {
		rs = append(rs, evaluate(o))
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = send(t, m, observedMsg{seq: 0, probed: true, results: rs, at: now})
	return m
}

// send passes one message to Update and returns the new model.
func send(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	nm, _ := m.Update(msg)
	return nm.(Model)
}

// press sends key presses, one per key name ("down", "enter", "q", "x").
func press(t *testing.T, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		m = send(t, m, keyMsg(k))
	}
	return m
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(k)
	if len(r) != 1 {
		panic("unknown key " + k)
	}
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// typeText presses one key per rune.
func typeText(t *testing.T, m Model, s string) Model {
	t.Helper()
	for _, r := range s {
		m = send(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return m
}

// frame is the screen without colours or attributes (the fixed profile of
// the golden frames).
func frame(m Model) string { return ansi.Strip(m.Render()) }

// golden compares the model's frame with testdata/<name>.golden.
func golden(t *testing.T, m Model, name string) {
	t.Helper()
	got := frame(m)
	checkFrame(t, got, m.width, m.height)
	compareGolden(t, name, got)
}

// compareGolden compares a frame with testdata/<name>.golden (with
// -update, writes it).
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("frame %s differs from the golden file (go test ./tui -update to accept):\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// checkFrame asserts the frame is exactly height lines of at most width
// cells.
func checkFrame(t *testing.T, f string, width, height int) {
	t.Helper()
	lines := strings.Split(f, "\n")
	if len(lines) != height {
		t.Errorf("frame has %d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, w, width, l)
		}
	}
}
