package cnpg

import (
	"context"
	"net"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// A status document as CloudNativePG's instance manager serves it
// (pkg/postgres/status.go's JSON tags), for a primary with two streaming
// replicas.
const primaryDoc = `{"currentLsn":"0/5000148","receivedLsn":"","replayLsn":"","systemID":"7447120993040404510","isPrimary":true,
"replayPaused":false,"pendingRestart":false,"pendingRestartForDecrease":false,"isWalReceiverActive":false,"isPgRewindRunning":false,
"mightBeUnavailable":false,"node":"node-1","pod":null,"timeLineID":1,
"replicationInfo":[{"applicationName":"ex-2","state":"streaming","receivedLsn":"0/5000148","writeLsn":"0/5000148","flushLsn":"0/5000148","replayLsn":"0/5000148","writeLag":"0s","flushLag":"0s","replayLag":"0s","syncState":"async","syncPriority":"0"}],
"executableHash":"x","instanceManagerVersion":"1.30.0","instanceArch":"amd64","isInstanceManagerUpgrading":false,"sessionID":"s","isPodReady":false}`

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]int64{"0/5000148": 0x5000148, "16/B374D848": 0x16<<32 | 0xB374D848, "0/0": 0} {
		if got, err := ParseLSN(in); err != nil || got != want {
			t.Errorf("%s: %d (%v), want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "5000148", "0/xyz", "1/2/3"} {
		if _, err := ParseLSN(bad); err == nil {
			t.Errorf("%q read as an LSN", bad)
		}
	}
}

// The instance manager's answers: a status, its PostgreSQL down (HTTP
// 500 with the error as text), a refusal, something else.
func TestDecode(t *testing.T) {
	e := decode("ex-1", 200, []byte(primaryDoc))
	f := e.CNPG
	if !e.Reachable || f == nil || !f.IsPrimary || *f.CurrentLSN != 0x5000148 || f.TimelineID != 1 || e.ClusterID != "7447120993040404510" ||
		e.LeaderID != "ex-1" || len(f.Replication) != 1 || f.Replication[0].Name != "ex-2" || f.ManagerVersion != "1.30.0" || !f.Writable() {
		t.Errorf("primary: %+v %+v", e, f)
	}
	if _, ok := f.Streaming("ex-2"); !ok {
		t.Error("ex-2 not streaming")
	}
	down := decode("ex-1", 500, []byte("failed to connect to `user=postgres database=postgres`: /controller/run/.s.PGSQL.5432: dial error\n"))
	if !down.Reachable || down.CNPG == nil || !strings.Contains(down.CNPG.Down, "failed to connect") || down.CNPG.Writable() || down.CNPG.RoleName() != "down" {
		t.Errorf("down: %+v", down)
	}
	fenced := decode("ex-1", 200, []byte(`{"isPrimary":true,"mightBeUnavailable":true,"mightBeUnavailableMaskedError":"failed to connect"}`))
	if fenced.CNPG == nil || fenced.CNPG.Writable() || !strings.Contains(fenced.CNPG.Down, "fenced") {
		t.Errorf("a fenced primary read as running: %+v", fenced.CNPG)
	}
	if r := decode("ex-1", 403, nil); r.Reachable || r.Failure != model.ProbeFailureCredentials {
		t.Errorf("refused: %+v", r)
	}
	if r := decode("ex-1", 200, []byte("<html>")); r.Reachable || r.Failure != model.ProbeFailureOther {
		t.Errorf("not JSON: %+v", r)
	}
}

// Probe reads through the pod proxy when given one, saying when the API
// server refused it (no get on pods/proxy), and through the DialFunc
// otherwise.
func TestProbeWays(t *testing.T) {
	target := []engine.Target{{Member: "ex-1", Namespace: "db", Pod: "ex-1"}}
	var asked string
	proxy := func(_ context.Context, ns, pod, scheme string, port int, path string) (int, []byte, error) {
		asked = scheme + ":" + ns + "/" + pod + ":" + string(rune('0'+port/1000)) + path
		return 200, []byte(primaryDoc), nil
	}
	fs := Engine{}.Probe(context.Background(), target, engine.ProbeOptions{ProxyGet: proxy})
	if !fs[0].Reachable || asked != "http:db/ex-1:8/pg/status" {
		t.Errorf("through the proxy: %+v, asked %q", fs[0], asked)
	}
	tlsTarget := []engine.Target{{Member: "ex-1", Namespace: "db", Pod: "ex-1", TLS: true}}
	Engine{}.Probe(context.Background(), tlsTarget, engine.ProbeOptions{ProxyGet: proxy})
	if asked != "https:db/ex-1:8/pg/status" {
		t.Errorf("--status-port-tls: asked %q, want https", asked)
	}
	forbidden := func(context.Context, string, string, string, int, string) (int, []byte, error) {
		return 0, nil, &engine.ProxyError{Code: 403, Message: `pods "ex-1" is forbidden: User "u" cannot get resource "pods/proxy"`}
	}
	fs = Engine{}.Probe(context.Background(), target, engine.ProbeOptions{ProxyGet: forbidden})
	if fs[0].Failure != model.ProbeFailureCredentials || !strings.Contains(fs[0].Err, "pods/proxy") {
		t.Errorf("forbidden: %+v", fs[0])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path != StatusPath {
			nethttp.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(primaryDoc))
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	dial := func(ctx context.Context, _, _ string, port int) (net.Conn, error) {
		if port != StatusPort {
			t.Errorf("dialled port %d", port)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
	fs = Engine{}.Probe(context.Background(), target, engine.ProbeOptions{Dial: dial, Timeout: 5 * time.Second})
	if !fs[0].Reachable || fs[0].CNPG == nil || !fs[0].CNPG.IsPrimary {
		t.Errorf("through the dialer: %+v", fs[0])
	}
}

func TestRecognises(t *testing.T) {
	tpl := model.PodTemplate{Containers: []model.Container{{Name: "postgres", Image: "ghcr.io/cloudnative-pg/postgresql:15",
		Command: []string{"/controller/manager", "instance", "run"}, Env: []model.EnvVar{{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"}},
		Ports: []model.ContainerPort{{Name: "postgresql", Port: 5432}, {Name: "status", Port: 8000}}}}}
	if !(Engine{}).Recognises(tpl) {
		t.Fatal("CloudNativePG's instance not recognised")
	}
	if tf := (Engine{}).Template(tpl); tf.Container != "postgres" || tf.ClientPort != 8000 || tf.DataDir != DataDir || tf.ClientTLS {
		t.Errorf("template %+v", tf)
	}
	tpl.Containers[0].Command = append(tpl.Containers[0].Command, "--status-port-tls")
	if tf := (Engine{}).Template(tpl); !tf.ClientTLS {
		t.Errorf("--status-port-tls not read: %+v", tf)
	}
	plain := model.PodTemplate{Containers: []model.Container{{Name: "postgres", Image: "postgres:15"}}}
	if (Engine{}).Recognises(plain) {
		t.Error("plain PostgreSQL taken for CloudNativePG")
	}
}

var now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func lsnp(v int64) *int64 { return &v }
func yes(b bool) *bool    { return &b }

// cluster is ex-1 primary at 0x5000000, ex-2 and ex-3 streaming and
// replayed to it, the Cluster healthy with ex-1 its primary.
func cluster() model.Observation {
	obs := model.Observation{At: now, EngineProbed: true, Cluster: model.ClusterFacts{
		Namespace: "db", Name: "ex", Engine: Name, Replicas: 3, CreatedAt: now.Add(-time.Hour),
		Operator: &model.OperatorFacts{Kind: "Cluster", Name: "ex", Status: "Cluster in healthy state", Available: yes(true), AvailableType: "Ready",
			Primary: "ex-1", TargetPrimary: "ex-1", ReadyMembers: 3},
	}}
	prim := &model.CNPGFacts{IsPrimary: true, CurrentLSN: lsnp(0x5000000), TimelineID: 1, SystemID: "744",
		Replication: []model.CNPGReplication{{Name: "ex-2", State: "streaming"}, {Name: "ex-3", State: "streaming"}}}
	for i := range 3 {
		name := "ex-" + string(rune('1'+i))
		f := prim
		role := "primary"
		if i > 0 {
			role = "replica"
			f = &model.CNPGFacts{ReceivedLSN: lsnp(0x5000000), ReplayLSN: lsnp(0x5000000), TimelineID: 1, SystemID: "744", WALReceiverActive: true}
		}
		obs.Members = append(obs.Members, model.Member{Name: name, Ordinal: i,
			Pod:    &model.PodFacts{Name: name, Running: true, Ready: true, Node: "n" + name, RoleLabel: role},
			Engine: &model.EngineFacts{Reachable: true, MemberID: name, ClusterID: "744", CNPG: f}})
	}
	return obs
}

func judgeOf(obs model.Observation) model.Judgement {
	return Rules{}.Judge(model.JudgeInput{Observation: obs, Now: now, PodPhases: make([]model.Phase, len(obs.Members)),
		LagThreshold: DefaultWALLagThreshold, BootstrapWindow: 10 * time.Minute})
}

func codes(j model.Judgement) []string {
	var out []string
	for _, r := range j.Reasons {
		out = append(out, string(r.Code)+"@"+r.Member)
	}
	slices.Sort(out)
	return out
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(o *model.Observation)
		want   []string
		detail string
	}{
		{"healthy", func(*model.Observation) {}, nil, ""},
		{"cloudnative-pg#5150: the Cluster healthy, no PostgreSQL running", func(o *model.Observation) {
			for i := range o.Members {
				o.Members[i].Engine.CNPG = &model.CNPGFacts{Down: "failed to connect: dial error"}
			}
		}, []string{"cr_status_stale@", "member_not_ready@ex-1", "member_not_ready@ex-2", "member_not_ready@ex-3", "primary_missing@"},
			`Cluster ex says "Cluster in healthy state" and Ready=True, but no instance answers as a running primary`},
		{"no PostgreSQL running, one instance unasked: the Cluster may be right", func(o *model.Observation) {
			for i := range o.Members {
				o.Members[i].Engine.CNPG = &model.CNPGFacts{Down: "failed to connect"}
			}
			o.Members[2].Engine = &model.EngineFacts{Failure: model.ProbeFailureTimeout, Err: "no answer"}
		}, []string{"member_not_ready@ex-1", "member_not_ready@ex-2", "member_unreachable@ex-3", "primary_missing@"}, ""},
		{"cloudnative-pg#11110: the replica with the most WAL received has not replayed it", func(o *model.Observation) {
			f := o.Members[1].Engine.CNPG
			f.ReceivedLSN, f.ReplayLSN, f.ReplayPaused = lsnp(0x5000000), lsnp(0x4000000), true
			o.Members[2].Engine.CNPG.ReceivedLSN, o.Members[2].Engine.CNPG.ReplayLSN = lsnp(0x4FF0000), lsnp(0x4FF0000)
		}, []string{"replica_lagging@ex-2", "switchover_target_lagging@ex-2"}, "CloudNativePG would promote ex-2 (it received the most WAL) but it has replayed 16.0 MiB less than it received: its promotion waits for that replay (cloudnative-pg#11110); its replay is paused, so it would not end; ex-3 has replayed its WAL: promote it instead (`kubectl cnpg promote ex ex-3 -n db`)"},
		{"a switchover in progress", func(o *model.Observation) { o.Cluster.Operator.TargetPrimary = "ex-2" }, []string{"switchover_in_progress@ex-2"}, ""},
		{"a failover pending", func(o *model.Observation) { o.Cluster.Operator.TargetPrimary = "pending" }, []string{"switchover_in_progress@"}, `its targetPrimary is "pending"`},
		{"an instance the Cluster wants is missing", func(o *model.Observation) { o.Cluster.Replicas = 4 }, []string{"pod_missing@"}, "wants 4 instances; 3 exist"},
		{"the Cluster records another primary", func(o *model.Observation) {
			o.Cluster.Operator.Primary, o.Cluster.Operator.TargetPrimary = "ex-3", "ex-3"
		}, []string{"leader_mismatch@ex-1"}, "records ex-3 as its primary but ex-1 answers"},
		{"two primaries", func(o *model.Observation) {
			o.Members[2].Engine.CNPG = &model.CNPGFacts{IsPrimary: true, CurrentLSN: lsnp(0x5000100), TimelineID: 2, SystemID: "744"}
		}, []string{"primary_split@"}, ""},
		{"a replica not streaming", func(o *model.Observation) {
			o.Members[0].Engine.CNPG.Replication = o.Members[0].Engine.CNPG.Replication[:1]
			o.Members[2].Engine.CNPG.WALReceiverActive = false
		}, []string{"replica_not_streaming@ex-3"}, "its WAL receiver is not active"},
		{"a replica of another cluster", func(o *model.Observation) {
			o.Members[2].Engine.CNPG.SystemID = "999"
		}, []string{"system_id_split@"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := cluster()
			tc.mutate(&obs)
			j := judgeOf(obs)
			if got := codes(j); !slices.Equal(got, tc.want) {
				t.Errorf("reasons %v, want %v: %+v", got, tc.want, j.Reasons)
			}
			if tc.detail != "" && !slices.ContainsFunc(j.Reasons, func(r model.Reason) bool { return strings.Contains(r.Detail, tc.detail) }) {
				t.Errorf("no reason says %q: %+v", tc.detail, j.Reasons)
			}
		})
	}
	j := judgeOf(cluster())
	if j.LeaderMember != "ex-1" || j.Frontier == nil || *j.Frontier != 0x5000000 || j.Tolerance != 1 || !j.Formed {
		t.Errorf("judgement %+v", j)
	}
	for i, p := range j.Phases {
		if p != model.PhaseMember || j.Lags[i] == nil || *j.Lags[i] != 0 {
			t.Errorf("member %d: %s lag %v", i, p, j.Lags[i])
		}
	}
}
