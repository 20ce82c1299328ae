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
