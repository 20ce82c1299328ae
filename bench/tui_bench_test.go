package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/engine/registry"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
	"github.com/hactl-dev/hactl/tui"
)

// framesPerOp is how many frames one op of BenchmarkTUIRender200 draws
// (of each kind), so that `make bench`'s -benchtime 3x still times
// thousands of frames.
const framesPerOp = 500

// BenchmarkTUIRender200: the time View() of the TUI's root model takes to
// draw one frame of a cluster's members view (160×50 cells) when the
// cluster has 200 members, against printing the `status` table (ToAPI and
// status.PrintTable, as `kubectl hactl status` does on every refresh) of
// the same 200 members. The model is the real one, loaded in process
// through its own Init/Update cycle from a Backend that returns a
// synthetic but complete observation (every member probed, each listing
// all 200 peers, a few lagging, one not ready).
func BenchmarkTUIRender200(b *testing.B) {
	const members = 200
	now := time.Now()
	engines := registry.Engines()
	opts := model.VerdictOptions{Rules: engine.VerdictRules(engines)}
	r := status.Evaluate(bigObservation("bench", "big", members, now), now, opts)
	if len(r.Observation.Members) != members {
		b.Fatalf("%d members", len(r.Observation.Members))
	}
	m := loadedModel(b, tui.Config{Namespace: "bench", Cluster: "big", Probes: true, Verdict: opts, Views: engine.Views(engines)}, r, 160, 50)
	if f := ansi.Strip(m.Render()); !strings.Contains(f, "big-0") || !strings.Contains(f, "leader big-0") {
		b.Fatalf("the frame shows no members:\n%s", f)
	}
	var sink int
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for j := 0; j < framesPerOp; j++ {
			v := m.View()
			sink += len(v.Content)
		}
	}
	tuiTime := time.Since(start)
	start = time.Now()
	for i := 0; i < b.N; i++ {
		for j := 0; j < framesPerOp; j++ {
			list := []*status.ClusterStatus{status.ToAPI(r)}
			if err := status.PrintTable(io.Discard, list, status.TableOptions{Color: true, Now: now}); err != nil {
				b.Fatal(err)
			}
		}
	}
	tableTime := time.Since(start)
	b.StopTimer()
	if sink == 0 {
		b.Fatal("empty frames")
	}
	frames := float64(b.N * framesPerOp)
	b.ReportMetric(float64(tuiTime.Nanoseconds())/frames, "tui-ns/frame")
	b.ReportMetric(float64(tableTime.Nanoseconds())/frames, "table-ns/frame")
	b.ReportMetric(float64(tuiTime)/float64(tableTime), "render-ratio")
}

// staticBackend answers every read with the same results.
type staticBackend struct {
	results []status.Result
	changes chan struct{}
	errs    chan error
}

func (s *staticBackend) Start(context.Context) error { return nil }
func (s *staticBackend) Changes() <-chan struct{}    { return s.changes }
func (s *staticBackend) Errors() <-chan error        { return s.errs }
func (s *staticBackend) Observe(context.Context, bool) ([]status.Result, status.Warnings, error) {
	return s.results, nil, nil
}

// loadedModel runs the model's own cycle (Init, the commands it issues,
// Update with their messages) at width×height until its frame shows the
// members of the focused cluster. Commands that do not return at once
// (ticks, waits for watch events) are left behind.
func loadedModel(b *testing.B, cfg tui.Config, r status.Result, width, height int) tui.Model {
	b.Helper()
	be := &staticBackend{results: []status.Result{r}, changes: make(chan struct{}), errs: make(chan error)}
	m0 := tui.New(context.Background(), cfg, tui.Deps{Backend: be})
	var m tea.Model = m0
	m, _ = m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	queue := []tea.Cmd{m0.Init()}
	member := r.Observation.Members[0].Name
	for !strings.Contains(ansi.Strip(m.(tui.Model).Render()), member) {
		if len(queue) == 0 {
			b.Fatalf("the model stopped issuing commands before showing %s:\n%s", member, ansi.Strip(m.(tui.Model).Render()))
		}
		cmd := queue[0]
		queue = queue[1:]
		if cmd == nil {
			continue
		}
		done := make(chan tea.Msg, 1)
		go func() { done <- cmd() }()
		var msg tea.Msg
		select {
		case msg = <-done:
		case <-time.After(500 * time.Millisecond):
			continue // a timer or a wait for an event
		}
		if batch, ok := msg.(tea.BatchMsg); ok {
			queue = append(queue, batch...)
			continue
		}
		if msg == nil {
			continue
		}
		var next tea.Cmd
		m, next = m.Update(msg)
		queue = append(queue, next)
	}
	return m.(tui.Model)
}

// bigObservation is an etcd cluster of n members as a probe of every
// member reports it: led by member 0, every member listing all n peers,
// every 17th member 1200 entries behind, member 13's pod not ready after
// restarts and not answering, pods spread over 50 nodes, a few events.
func bigObservation(ns, name string, n int, now time.Time) model.Observation {
	const clusterID = "8e9e05c52164694d"
	id := func(i int) string { return fmt.Sprintf("%016x", 0x1a2b3c4d5e6f7081*uint64(i+3)) }
	headless := name + "-headless"
	peers := make([]model.Peer, n)
	initial := make([]model.InitialClusterEntry, n)
	for i := range peers {
		pod := fmt.Sprintf("%s-%d", name, i)
		url := fmt.Sprintf("http://%s.%s.%s.svc.cluster.local:2380", pod, headless, ns)
		peers[i] = model.Peer{ID: id(i), Name: pod, PeerURLs: []string{url}}
		initial[i] = model.InitialClusterEntry{Name: pod, PeerURL: url}
	}
	o := model.Observation{
		At: now,
		Cluster: model.ClusterFacts{
			Namespace: ns, Name: name, Engine: etcdengine.Name, UID: "sts-" + name, ResourceVersion: "91000",
			Replicas: n, ReadyReplicas: n - 1, CreatedAt: now.Add(-30 * 24 * time.Hour), ServiceName: headless,
			Template: model.TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379,
				Container: "etcd", Image: "registry.k8s.io/etcd:3.6.16-0", InitialClusterDecoded: true, InitialCluster: initial,
				QuotaBackendBytes: 8 << 30, DataDir: "/var/lib/etcd", DataVolume: "data", DataMount: "/var/lib/etcd"},
			Shape: model.ShapeStaticExisting, PodManagementPolicy: "Parallel",
		},
		PDB:             &model.PDBFacts{Name: name, MinAvailable: -1, MaxUnavailable: 1},
		ClientEndpoints: &model.EndpointFacts{Service: name + "-client", Ready: n - 1, Total: n},
		EngineProbed:    true,
		Events: []model.EventFacts{
			{Type: "Warning", Reason: "Unhealthy", Object: "Pod/" + name + "-13", Message: "Readiness probe failed: connection refused", Count: 42, Last: now.Add(-time.Minute)},
			{Type: "Normal", Reason: "Pulled", Object: "Pod/" + name + "-13", Message: "Container image already present on machine", Count: 7, Last: now.Add(-2 * time.Minute)},
			{Type: "Normal", Reason: "SuccessfulCreate", Object: "StatefulSet/" + name, Message: "create Pod " + name + "-13 in StatefulSet " + name + " successful", Count: 1, Last: now.Add(-time.Hour)},
		},
	}
	for i := 0; i < n; i++ {
		pod := fmt.Sprintf("%s-%d", name, i)
		e := &model.EngineFacts{
			Reachable: true, MemberID: id(i), ClusterID: clusterID, LeaderID: id(0), RaftTerm: 12,
			RaftIndex: 880000, RaftApplied: 879990, DBSize: 512 << 20, DBSizeInUse: 400 << 20, DBSizeQuota: 8 << 30,
			Version: "3.6.16", StorageVersion: "3.6.0", Peers: peers, ProbedAt: now, Took: 4 * time.Millisecond,
		}
		switch {
		case i == 0:
			e.RaftApplied = 880000
		case i%17 == 0:
			e.RaftApplied = 878800
		}
		p := &model.PodFacts{
			Name: pod, UID: "uid-" + pod, ResourceVersion: "5000", Node: fmt.Sprintf("node-%02d", i%50), Phase: "Running",
			Started: true, Running: true, Ready: true, EverStarted: true, CreatedAt: now.Add(-time.Duration(i+1) * time.Hour),
			Revision: name + "-7d9f8c6b5",
		}
		if i == 13 {
			p.Ready, p.Restarts = false, 9
			e = &model.EngineFacts{Err: "dial: connection refused", Failure: model.ProbeFailureConnect, ProbedAt: now}
		}
		o.Members = append(o.Members, model.Member{
			Name: pod, Ordinal: i, Pod: p, Engine: e,
			PVC: &model.PVCFacts{Name: "data-" + pod, UID: "pvc-" + pod, ResourceVersion: "300", Phase: "Bound"},
		})
	}
	return o
}
