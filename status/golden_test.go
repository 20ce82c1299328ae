package status

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/model"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

var goldenNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// goldenResults are two clusters: a healthy one, and one whose member 2
// lags and whose member 0 re-bootstrapped into its own cluster (seed 000).
func goldenResults() []Result {
	mk := func(name string, ids []string, cluster string) model.Observation {
		created := goldenNow.Add(-72 * time.Hour)
		o := model.Observation{
			At:           goldenNow,
			EngineProbed: true,
			Cluster: model.ClusterFacts{
				Namespace: "db", Name: name, Engine: etcdengine.Name, UID: "uid-" + name, Replicas: 3, ReadyReplicas: 3,
				CreatedAt: created, ServiceName: name + "-headless", Shape: model.ShapeStaticExisting,
				Template: model.TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379},
			},
			PDB:             &model.PDBFacts{Name: name, MinAvailable: -1, MaxUnavailable: 1},
			ClientEndpoints: &model.EndpointFacts{Service: name, Ready: 3, Total: 3},
		}
		var peers []model.Peer
		for i, id := range ids {
			peers = append(peers, model.Peer{ID: id, Name: name + "-" + string(rune('0'+i)), PeerURLs: []string{"http://" + name + "-" + string(rune('0'+i)) + ":2380"}})
		}
		for i, id := range ids {
			pod := name + "-" + string(rune('0'+i))
			o.Members = append(o.Members, model.Member{
				Name: pod, Ordinal: i,
				Pod: &model.PodFacts{Name: pod, UID: "pod-uid-" + pod, ResourceVersion: "10", Node: "node-" + string(rune('a'+i)), Phase: "Running",
					Started: true, Running: true, Ready: true, EverStarted: true, CreatedAt: created},
				PVC: &model.PVCFacts{Name: "data-" + pod, UID: "pvc-uid-" + pod, ResourceVersion: "5", Phase: "Bound"},
				Engine: &model.EngineFacts{Reachable: true, MemberID: id, ClusterID: cluster, LeaderID: ids[0], RaftTerm: 4,
					RaftIndex: 5000, RaftApplied: 5000, Version: "3.6.16", StorageVersion: "3.6.0", DBSize: 2 << 20, DBSizeInUse: 1 << 20,
					Peers: peers, ProbedAt: goldenNow},
			})
		}
		return o
	}
	healthy := mk("etcd-main", []string{"8e9e05c52164694d", "91bc3c398fb3c146", "fd422379fda50e48"}, "cdf818194e3a8c32")
	bad := mk("etcd-seed", []string{"1c5e2c7d3f7a9b01", "2d6f3d8e4a8bac12", "3e7a4e9f5b9cbd23"}, "aa11bb22cc33dd44")
	bad.Members[2].Engine.RaftApplied = 1200
	e0 := bad.Members[0].Engine
	e0.ClusterID, e0.LeaderID, e0.RaftTerm, e0.RaftIndex, e0.RaftApplied = "ff00ee11dd22cc33", e0.MemberID, 2, 8, 8
	e0.Peers = e0.Peers[:1]
	bad.Members[1].Engine.LeaderID = bad.Members[1].Engine.MemberID
	bad.Members[2].Engine.LeaderID = bad.Members[1].Engine.MemberID
	var out []Result
	for _, o := range []model.Observation{healthy, bad} {
		out = append(out, evaluated(o, goldenNow))
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./status/ -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (rerun with -update if intended)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenTable(t *testing.T) {
	var list []*ClusterStatus
	for _, r := range goldenResults() {
		list = append(list, ToAPI(r))
	}
	for _, c := range []struct {
		file string
		opts TableOptions
	}{
		{"table.golden", TableOptions{Now: goldenNow}},
		{"table-wide.golden", TableOptions{Now: goldenNow, Wide: true, ShowNamespace: true}},
		{"table-color.golden", TableOptions{Now: goldenNow, Color: true}},
	} {
		var b bytes.Buffer
		if err := PrintTable(&b, list, c.opts); err != nil {
			t.Fatal(err)
		}
		golden(t, c.file, b.Bytes())
	}
}

func TestGoldenJSON(t *testing.T) {
	b, err := json.MarshalIndent(ListToAPI(goldenResults()), "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "list.json.golden", append(b, '\n'))
}

// TestGoldenSeesTheFailures guards the golden files themselves: the second
// cluster must carry the reasons the fixture was built to produce.
func TestGoldenSeesTheFailures(t *testing.T) {
	rs := goldenResults()
	if !rs[0].Verdict.FailoverReady {
		t.Fatalf("healthy fixture not failover-ready: %+v", rs[0].Verdict.Reasons)
	}
	want := map[model.ReasonCode]bool{model.ReasonClusterIDSplit: false, model.ReasonMemberLagging: false}
	for _, r := range rs[1].Verdict.Reasons {
		if _, ok := want[r.Code]; ok {
			want[r.Code] = true
		}
	}
	for c, seen := range want {
		if !seen {
			t.Errorf("seed fixture lacks %s: %+v", c, rs[1].Verdict.Reasons)
		}
	}
	if rs[1].Verdict.ControlReady {
		t.Error("a cluster ID split must not be control-ready")
	}
}
