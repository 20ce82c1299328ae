package actions_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// latencyProxy is a TCP proxy in front of members' client ports that,
// once armed, holds every reply the member sends after the client's
// request (the first HTTP/2 DATA frame of a stream) for delay: the request
// reaches the member and commits, its answer comes too late for the
// client's deadline. Everything before the request (the HTTP/2 handshake)
// passes at once.
type latencyProxy struct {
	upstream func(ctx context.Context, ns, pod string, port int) (net.Conn, error)
	delay    time.Duration
	armed    atomic.Bool
	delayed  atomic.Int64
	wg       sync.WaitGroup
}

func (p *latencyProxy) dial(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
	up, err := p.upstream(ctx, ns, pod, port)
	if err != nil {
		return nil, err
	}
	client, server := net.Pipe()
	armed := p.armed.Load()
	var requestSent atomic.Bool
	p.wg.Add(2)
	go func() { // client → member: as is, watching for the request's DATA
		defer p.wg.Done()
		defer up.Close()
		var pending []byte
		skip := 24 // the client connection preface
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				pending = append(pending, buf[:n]...)
				for {
					if skip > 0 {
						k := min(skip, len(pending))
						pending, skip = pending[k:], skip-k
						if skip > 0 {
							break
						}
					}
					if len(pending) < 9 {
						break
					}
					length := int(pending[0])<<16 | int(pending[1])<<8 | int(pending[2])
					if pending[3] == 0 { // DATA
						requestSent.Store(true)
					}
					skip = 9 + length
				}
				if _, werr := up.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // member → client: late once the request went out
		defer p.wg.Done()
		defer server.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 {
				if armed && requestSent.Load() {
					p.delayed.Add(1)
					t := time.NewTimer(p.delay)
					<-t.C
				}
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return client, nil
}

// TestRemoveMemberThatTimesOutButCommits: the member removal's answer is
// held past the client's deadline by a latency proxy, after the leader
// committed it. The executor must record "may have changed" (never
// "stopped before changing anything"), find out from the next
// observation that the member is gone, and carry the action on to done.
func TestRemoveMemberThatTimesOutButCommits(t *testing.T) {
	e := newEnv(t, true)
	formed := time.Now()
	e.startKubelet()
	// etcd refuses a reconfiguration until its leader has been connected
	// to every peer for 5 s (its health interval); a refusal held by the
	// proxy would be an unknown outcome that changed nothing. The first
	// removal must be one that commits, so the cluster gets that old.
	testenv.Poll(t, time.Minute, func() (bool, error) { return time.Since(formed) > 7*time.Second, nil })
	target := e.follower()
	e.putSentinel()
	proxy := &latencyProxy{upstream: e.dialer.dial, delay: 3 * time.Second}
	defer proxy.wg.Wait()
	x := e.executor()
	x.Members = etcdengine.Ops{Dial: proxy.dial, Timeout: 500 * time.Millisecond}
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed || d.MemberFence == nil {
		t.Fatalf("decision:\n%s", strings.Join(classify.Describe(d), "\n"))
	}
	oldID := d.MemberFence.ID
	// Only the member removal meets the proxy armed: the steps after it
	// talk to the members promptly.
	var armedOnce sync.Once
	opts := actions.ExecOptions{OnReceipt: func(r model.Receipt) {
		if r.Step == model.StepVerifyFences {
			armedOnce.Do(func() { proxy.armed.Store(true) })
		}
		if r.Step == model.StepRemoveMember {
			proxy.armed.Store(false)
		}
	}}
	res, err := x.Execute(context.Background(), d, opts)
	if err != nil {
		t.Fatalf("execute: %v\nreceipts: %s", err, receiptsText(res.Receipts))
	}
	if proxy.delayed.Load() == 0 {
		t.Fatal("the proxy held no reply: the test did not make the removal time out")
	}
	var unknown, observed bool
	for _, r := range res.Receipts {
		if r.Step == model.StepRemoveMember && r.Outcome == model.OutcomeUnknown {
			unknown = true
		}
		if r.Step == model.StepRemoveMember && r.Outcome == model.OutcomeDone && strings.Contains(r.Detail, "took effect") {
			observed = true
		}
		if strings.Contains(r.Detail, "before changing anything") {
			t.Errorf("a receipt claims nothing changed: %s", r.Detail)
		}
	}
	if !unknown || !observed {
		t.Errorf("receipts do not record the unanswered removal and what was observed after it (unknown %v, observed %v):%s", unknown, observed, receiptsText(res.Receipts))
	}
	// Independent observation: the old member is gone, three voters, the
	// sentinel on every member; the ledger entry is done.
	if vs := e.voters(); len(vs) != 3 {
		t.Errorf("voters after the replace: %v", vs)
	} else if _, ok := vs[oldID]; ok {
		t.Errorf("the old member %s is still listed", oldID)
	}
	e.assertSentinelEverywhere()
	l, err := actions.ReadLedger(context.Background(), e.cs, e.ns, "etcd")
	if err != nil || len(l.Entries) != 1 || l.Entries[0].State != model.EntryDone {
		t.Fatalf("ledger %+v (%v): want one entry, done", l.Entries, err)
	}
}
