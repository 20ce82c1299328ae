package etcd

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

func TestAlarmsFromStatusErrors(t *testing.T) {
	got := alarmsFromErrors([]string{
		"etcdserver: no leader",
		"memberID:16436294954636730582 alarm:NOSPACE ",
		"memberID:16436294954636730582 alarm:NOSPACE",
		"memberID:1 alarm:CORRUPT",
		"memberID:x alarm:NOSPACE",
	})
	want := []model.Alarm{{Type: "CORRUPT", MemberID: "1"}, {Type: "NOSPACE", MemberID: "e419732d92aae0d6"}}
	if len(got) != len(want) {
		t.Fatalf("alarms %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("alarm %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestIDs(t *testing.T) {
	for _, id := range []uint64{1, 0x8e9e05c52164694d, ^uint64(0)} {
		s := FormatID(id)
		back, err := ParseID(s)
		if err != nil || back != id {
			t.Errorf("ParseID(FormatID(%d)) = %d, %v", id, back, err)
		}
	}
	for _, bad := range []string{"", "0", "xyz", "-1", "10000000000000000"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) succeeded", bad)
		}
	}
}

func TestClassifyWrapsSentinels(t *testing.T) {
	err := classify(rpctypes.ErrMemberLearnerNotReady)
	if !errors.Is(err, ErrLearnerNotInSync) || !errors.Is(err, rpctypes.ErrMemberLearnerNotReady) {
		t.Errorf("classify(learner not ready) = %v", err)
	}
	other := errors.New("boom")
	if classify(other) != other || classify(nil) != nil {
		t.Error("classify changed an unknown error")
	}
}

func TestProbeWithoutMembersAnswering(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	dial := func(ctx context.Context, _, pod string, _ int) (net.Conn, error) {
		var d net.Dialer
		switch pod {
		case "refused":
			return d.DialContext(ctx, "tcp", closed)
		case "silent":
			return d.DialContext(ctx, "tcp", silent.Addr().String())
		case "hanging":
			<-ctx.Done() // a dialer that only gives up with its context
			return nil, ctx.Err()
		}
		return nil, errors.New("no such pod")
	}
	ts := []engine.Target{
		{Member: "etcd-0", Namespace: "ns", Pod: "refused", Port: 2379},
		{Member: "etcd-1", Namespace: "ns", Pod: "silent", Port: 2379},
		{Member: "etcd-2", Namespace: "ns", Pod: "hanging", Port: 2379},
		{Member: "etcd-3", Namespace: "ns", Pod: "", Port: 2379},
	}
	start := time.Now()
	facts := New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 500 * time.Millisecond, Dial: dial})
	took := time.Since(start)
	t.Logf("probe took %s", took)
	if took > 5*time.Second {
		t.Fatalf("probe hung: %s", took)
	}
	want := []model.ProbeFailure{model.ProbeFailureConnect, model.ProbeFailureTimeout, model.ProbeFailureTimeout, model.ProbeFailureOther}
	for i, f := range facts {
		t.Logf("%s: failure=%q err=%q", ts[i].Member, f.Failure, f.Err)
		if f.Reachable || f.Failure != want[i] || !strings.Contains(f.Err, ts[i].Member) {
			t.Errorf("%s: reachable=%v failure=%q err=%q, want failure %q naming the member", ts[i].Member, f.Reachable, f.Failure, f.Err, want[i])
		}
		if f.ProbedAt.IsZero() {
			t.Errorf("%s: ProbedAt unset", ts[i].Member)
		}
	}
	if !strings.Contains(facts[0].Err, "connection refused") || !strings.Contains(facts[0].Err, "dialing") {
		t.Errorf("refused member: %q should say it was dialing and was refused", facts[0].Err)
	}

	if got := New().Probe(context.Background(), ts[:1], engine.ProbeOptions{}); got[0].Reachable || !strings.Contains(got[0].Err, "no dialer") {
		t.Errorf("probe without a dialer: %+v", got[0])
	}
	if got := New().Probe(context.Background(), nil, engine.ProbeOptions{Dial: dial}); len(got) != 0 {
		t.Errorf("probe of no targets: %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := New().Probe(ctx, ts[1:2], engine.ProbeOptions{Dial: dial}); got[0].Reachable || !strings.Contains(got[0].Err, "cancelled") {
		t.Errorf("probe with a cancelled context: %+v", got[0])
	}
}

// The token share: a learner waits for a token a voter issued; one a
// learner did not take is stale, so a voter holding it issues another,
// and the learner waits for that one, not the stale one.
func TestTokenShare(t *testing.T) {
	s := &tokenShare{tokens: map[string]string{}, stale: map[string]string{}}
	// wait is what a learner waiting briefly under k gets.
	wait := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
		defer cancel()
		return s.wait(ctx, "k")
	}
	if tok := wait(); tok != "" {
		t.Errorf("a token %q with none issued", tok)
	}
	s.put("k", "t1")
	if tok := wait(); tok != "t1" {
		t.Errorf("wait: %q, want t1", tok)
	}
	s.reject("k", "t1")
	if !s.isStale("k", "t1") || s.isStale("k", "t2") || s.isStale("other", "t1") {
		t.Error("staleness is not t1's under k alone")
	}
	s.put("k", "t1") // a voter that has not yet noticed
	if tok := wait(); tok != "" {
		t.Errorf("wait handed out the stale token %q", tok)
	}
	s.put("k", "t2")
	if tok := wait(); tok != "t2" {
		t.Errorf("wait: %q, want the fresh t2", tok)
	}
	s.drop("k", "t1")
	if s.tokens["k"] != "t2" {
		t.Error("dropping an old token dropped the current one")
	}
	a := &engine.BasicAuth{Username: "root", Password: "p"}
	if tokenKey(engine.Target{Namespace: "db", Cluster: "a"}, a) == tokenKey(engine.Target{Namespace: "db", Cluster: "b"}, a) {
		t.Error("two clusters of one namespace share a token key")
	}
	if k := tokenKey(engine.Target{Namespace: "db", Cluster: "a"}, a); strings.Contains(k, "root") {
		t.Errorf("the key %q carries the user", k)
	}
}
