package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Bodies as Patroni 3.0.2 sent them (design/PATRONI-NOTES.md §4).
const (
	leaderBody = `{"state":"running","postmaster_start_time":"2026-12-01 18:46:53.401501+00:00","role":"master",
	  "server_version":150018,"xlog":{"location":67108864},"timeline":1,
	  "replication":[{"usename":"replicator","application_name":"pg1","client_addr":"127.0.0.1",
	                  "state":"streaming","sync_state":"async","sync_priority":0}],
	  "dcs_last_seen":1796150821,"database_system_identifier":"7714408992045998259",
	  "patroni":{"version":"3.0.2","scope":"pgr"}}`
	replicaBody = `{"state":"running","postmaster_start_time":"2026-12-01 18:46:53+00:00","role":"replica","server_version":150018,
	  "xlog":{"received_location":67108864,"replayed_location":67108000,"replayed_timestamp":null,"paused":true},
	  "timeline":1,"dcs_last_seen":1796150817,"database_system_identifier":"7714408992045998259",
	  "sync_standby":true,"pending_restart":true,"pause":true,"cluster_unlocked":true,"tags":{"nofailover":"on"},
	  "patroni":{"version":"3.0.2","scope":"pgr"}}`
	// The status query failed: no xlog, no server version.
	unknownBody = `{"state":"unknown","role":"replica","cluster_unlocked":true,"dcs_last_seen":1796150817,
	  "database_system_identifier":"7714408992045998259","patroni":{"version":"3.0.2","scope":"pgr"}}`
)

func TestDecodeStatus(t *testing.T) {
	s, err := decodeStatus([]byte(leaderBody))
	if err != nil {
		t.Fatal(err)
	}
	p := s.facts()
	if !p.Writable() || p.WALLocation == nil || *p.WALLocation != 67108864 || p.ReceivedLocation != nil || p.ReplayedLocation != nil {
		t.Errorf("leader: %+v", p)
	}
	if r, ok := p.Streaming("pg1"); !ok || r.SyncState != "async" {
		t.Errorf("leader replication: %+v", p.Replication)
	}
	if p.SystemID != "7714408992045998259" || p.ServerVersion != 150018 || p.PatroniVersion != "3.0.2" || p.Scope != "pgr" ||
		!p.DCSLastSeen.Equal(time.Unix(1796150821, 0)) || p.Timeline != 1 || p.NoFailover {
		t.Errorf("leader: %+v", p)
	}

	s, err = decodeStatus([]byte(replicaBody))
	if err != nil {
		t.Fatal(err)
	}
	p = s.facts()
	if p.Writable() || p.WALLocation != nil || *p.ReceivedLocation != 67108864 || *p.ReplayedLocation != 67108000 || !p.ReplayPaused {
		t.Errorf("replica positions: %+v", p)
	}
	if !p.SyncStandby || !p.PendingRestart || !p.Paused || !p.ClusterUnlocked || !p.NoFailover {
		t.Errorf("replica flags: %+v", p)
	}

	s, err = decodeStatus([]byte(unknownBody))
	if err != nil {
		t.Fatal(err)
	}
	p = s.facts()
	if p.State != "unknown" || p.WALLocation != nil || p.ReceivedLocation != nil || p.ReplayedLocation != nil || p.ServerVersion != 0 {
		t.Errorf("unknown state: positions must stay nil: %+v", p)
	}

	// A field of an unexpected type is dropped, the rest kept.
	s, err = decodeStatus([]byte(`{"state":"running","role":"master","timeline":"one","xlog":{"location":5}}`))
	if err != nil || s.XLog == nil || *s.XLog.Location != 5 || s.Timeline != 0 {
		t.Errorf("odd field: %+v, %v", s, err)
	}
	for _, body := range []string{``, `no auth header received`, `[]`, `{"members":[]}`, `<html>`} {
		if _, err := decodeStatus([]byte(body)); err == nil {
			t.Errorf("%q decoded as a status", body)
		}
	}
}

func TestDecodeLeader(t *testing.T) {
	for _, tc := range []struct {
		code       int
		body, want string
		err        bool
	}{
		{200, `{"members":[{"name":"pg1","role":"replica"},{"name":"pg3","role":"leader"}]}`, "pg3", false},
		{200, `{"members":[{"name":"pg1","role":"standby_leader"}]}`, "pg1", false},
		{200, `{"members":[{"name":"pg1","role":"replica","lag":"unknown"}]}`, "", false},
		{503, `{"members":[]}`, "", true},
		{200, `nope`, "", true},
	} {
		got, err := decodeLeader(&answer{code: tc.code, body: []byte(tc.body)})
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%d %s: %q, %v", tc.code, tc.body, got, err)
		}
	}
}

func TestPostgresVersion(t *testing.T) {
	for v, want := range map[int]string{150018: "15.18", 170000: "17.0", 100001: "10.1", 90624: "9.6.24", 0: "", -1: ""} {
		if got := PostgresVersion(v); got != want {
			t.Errorf("PostgresVersion(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestBasicAuthNeverPrinted(t *testing.T) {
	const secret = "hunter2-very-secret"
	a := BasicAuth{Username: "admin-user", Password: secret}
	type holder struct {
		Auth BasicAuth
		Ptr  *BasicAuth
	}
	h := holder{Auth: a, Ptr: &a}
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		outputs = append(outputs, fmt.Sprintf(verb, a), fmt.Sprintf(verb, &a), fmt.Sprintf(verb, h), fmt.Sprintf(verb, []BasicAuth{a}))
	}
	outputs = append(outputs, a.String(), a.GoString(), fmt.Sprint(a), fmt.Sprintln(&a))
	for _, v := range []any{a, &a, h} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(b))
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("switchover", "auth", a, "ptr", &a)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("switchover", "auth", a)
	outputs = append(outputs, logs.String())
	for _, out := range outputs {
		for _, leak := range []string{secret, "hunter", "admin-user", "68756e74"} {
			if strings.Contains(out, leak) {
				t.Errorf("output leaks basic auth (%q): %s", leak, out)
			}
		}
	}
}

// TestProbeFailuresWithoutAMember: a listener that never answers, a dialer
// that only gives up with its context, no dialer, a cancelled context.
// Every Probe returns in about one timeout.
func TestProbeFailuresWithoutAMember(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dial := func(ctx context.Context, _, pod string, _ int) (net.Conn, error) {
		var d net.Dialer
		switch pod {
		case "silent":
			return d.DialContext(ctx, "tcp", silent.Addr().String())
		case "hanging":
			<-ctx.Done()
			return nil, ctx.Err()
		case "stubborn": // ignores its context
			time.Sleep(3 * time.Second)
			return nil, errors.New("gave up late")
		}
		return nil, errors.New("no such pod")
	}
	ts := []engine.Target{
		{Member: "pg-0", Namespace: "ns", Pod: "silent", Port: 8008},
		{Member: "pg-1", Namespace: "ns", Pod: "hanging", Port: 8008},
		{Member: "pg-2", Namespace: "ns", Pod: "stubborn", Port: 8008},
		{Member: "pg-3", Namespace: "ns", Pod: "", Port: 8008},
	}
	start := time.Now()
	facts := New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 500 * time.Millisecond, Dial: dial})
	took := time.Since(start)
	if took > 2*time.Second {
		t.Errorf("probe took %s", took)
	}
	want := []model.ProbeFailure{model.ProbeFailureTimeout, model.ProbeFailureTimeout, model.ProbeFailureTimeout, model.ProbeFailureOther}
	for i, f := range facts {
		t.Logf("%s: failure=%q err=%q", ts[i].Member, f.Failure, f.Err)
		if f.Reachable || f.Failure != want[i] || !strings.Contains(f.Err, ts[i].Member) || f.ProbedAt.IsZero() {
			t.Errorf("%s: %+v, want failure %q naming the member", ts[i].Member, f, want[i])
		}
	}
	if !strings.Contains(facts[0].Err, "connected, no reply") || !strings.Contains(facts[1].Err, "dialing") {
		t.Errorf("messages do not say how far the probe got: %q, %q", facts[0].Err, facts[1].Err)
	}
	if got := New().Probe(context.Background(), ts[:1], engine.ProbeOptions{}); got[0].Reachable || !strings.Contains(got[0].Err, "no dialer") {
		t.Errorf("probe without a dialer: %+v", got[0])
	}
	if got := New().Probe(context.Background(), nil, engine.ProbeOptions{Dial: dial}); len(got) != 0 {
		t.Errorf("probe of no targets: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := New().Probe(ctx, ts[:1], engine.ProbeOptions{Dial: dial}); got[0].Reachable || !strings.Contains(got[0].Err, "cancelled") {
		t.Errorf("probe with a cancelled context: %+v", got[0])
	}
}

// TestActionOutcomeUnknown: an action written to a member that never
// answers is engine.ErrOutcomeUnknown; one that could not be dialled is
// not.
func TestActionOutcomeUnknown(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dial := func(ctx context.Context, _, pod string, _ int) (net.Conn, error) {
		if pod == "silent" {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", silent.Addr().String())
		}
		return nil, errors.New("no such pod")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	o := engine.ProbeOptions{Dial: dial}
	err = Switchover(ctx, engine.Target{Member: "pg-0", Pod: "silent", Port: 8008}, o, "pg-0", "pg-1", WithBasicAuth(BasicAuth{Username: "u", Password: "pw-xyz"}))
	if !errors.Is(err, engine.ErrOutcomeUnknown) || strings.Contains(err.Error(), "pw-xyz") {
		t.Errorf("switchover to a silent member: %v, want ErrOutcomeUnknown", err)
	}
	err = Reinitialize(context.Background(), engine.Target{Member: "pg-1", Pod: "gone", Port: 8008}, o)
	if err == nil || errors.Is(err, engine.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "no such pod") {
		t.Errorf("reinitialize through a failed dial: %v", err)
	}
	if err := Switchover(context.Background(), engine.Target{Pod: "silent", Port: 8008}, o, "", "pg-1"); err == nil {
		t.Error("switchover without a leader name accepted")
	}
}

// A 401 (basic auth refused) and a 403 (allowlist, client certificate)
// are different refusals: both change nothing, and each is told apart so
// that the user is pointed at the right fix.
func TestRefusalsByCode(t *testing.T) {
	for _, c := range []struct {
		code      int
		want, not error
	}{
		{401, engine.ErrUnauthorized, engine.ErrForbidden},
		{403, engine.ErrForbidden, engine.ErrUnauthorized},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(c.code)
			_, _ = w.Write([]byte("Access is denied"))
		}))
		addr := strings.TrimPrefix(srv.URL, "http://")
		dial := func(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
		err := Reinitialize(context.Background(), engine.Target{Member: "pg-1", Pod: "pg-1", Port: 8008}, engine.ProbeOptions{Dial: dial})
		srv.Close()
		if !errors.Is(err, c.want) || errors.Is(err, c.not) || errors.Is(err, engine.ErrOutcomeUnknown) {
			t.Errorf("HTTP %d: %v, want %v", c.code, err, c.want)
		}
	}
}
