package actions_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/engine/registry"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/classify"
	"github.com/hactl-dev/hactl/internal/testenv"
	"github.com/hactl-dev/hactl/model"
)

// frozen stands for the first holder's process frozen (SIGSTOP, a
// paused VM) in the middle of its work: once freeze is called, its next
// engine dial and its lease renewals wait until thaw, whatever their
// contexts say, and then go on at once, as a woken process does. The
// renewal then fails (the API server never answered it); the dial
// completes, and counts the bytes written to the member through it.
type frozen struct {
	next    func(ctx context.Context, ns, pod string, port int) (net.Conn, error)
	armed   atomic.Bool
	frozen  atomic.Bool
	entered chan string
	thawed  chan struct{}
	written atomic.Int64
}

func (f *frozen) dial(ctx context.Context, ns, pod string, port int) (net.Conn, error) {
	if !f.armed.CompareAndSwap(true, false) {
		return f.next(ctx, ns, pod, port)
	}
	f.frozen.Store(true)
	f.entered <- pod
	<-f.thawed
	c, err := f.next(context.Background(), ns, pod, port)
	if err != nil {
		return nil, err
	}
	return countedConn{Conn: c, n: &f.written}, nil
}

func (f *frozen) thaw() { close(f.thawed) }

// wrap is the first holder's API transport: its Lease writes wait while
// it is frozen and fail once it is.
func (f *frozen) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if f.frozen.Load() && req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/leases/") {
			<-f.thawed
			return nil, errors.New("the API server did not answer this holder")
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestEngineRequestAfterLeaseIsNotSent: the first holder is frozen in its
// dial to the leader for a member removal (after its last lock check),
// its lease renewals with it, until its lease has lapsed and a second
// holder took the Lease over; then it wakes and the dial completes. It
// must write nothing to the member: the real etcd members, read with a
// client of their own, still list the member, and the run reports the
// lock lost with the removal not sent.
func TestEngineRequestAfterLeaseIsNotSent(t *testing.T) {
	e := newEnv(t, true)
	formed := time.Now()
	// etcd refuses a reconfiguration until its leader has been connected
	// to every peer for 5 s: the removal must be one etcd would commit,
	// or its refusal would prove nothing.
	testenv.Poll(t, time.Minute, func() (bool, error) { return time.Since(formed) > 7*time.Second, nil })
	target := e.follower()

	h := &frozen{next: e.dialer.dial, entered: make(chan string, 1), thawed: make(chan struct{})}
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Wrap(actions.GuardTransport) // as hactl's own clients
	cfg.Wrap(h.wrap)
	first := kubernetes.NewForConfigOrDie(cfg)
	thawed := false
	defer func() {
		if !thawed {
			h.thaw()
		}
	}()
	const dur = 3 * time.Second
	x := &actions.Executor{
		// The probe timeout bounds the engine's dial and request too:
		// long enough that the held dial, once released, is still
		// within its budget.
		Observer:     &actions.Observer{Engines: registry.Engines(), Client: first, Dial: h.dial, ProbeTimeout: 20 * time.Second},
		Identity:     actions.NewIdentity(),
		PollInterval: 100 * time.Millisecond, WaitTimeout: 30 * time.Second,
		LockDuration: dur, RefuseGrace: 20 * time.Second,
	}
	d := e.decide(x, target)
	if d.Verb != model.VerbProceed || d.MemberFence == nil {
		t.Fatalf("decision:\n%s", strings.Join(classify.Describe(d), "\n"))
	}
	oldID := d.MemberFence.ID
	// After the fences are verified under the lock, the next dial is the
	// engine's, for the first member change.
	opts := actions.ExecOptions{OnReceipt: func(r model.Receipt) {
		if r.Step == model.StepVerifyFences && r.Outcome == model.OutcomeDone {
			h.armed.Store(true)
		}
	}}
	type result struct {
		res actions.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := x.Execute(context.Background(), d, opts)
		done <- result{res, err}
	}()
	select {
	case <-h.entered:
	case r := <-done:
		t.Fatalf("the run ended before its engine dial: %v\nreceipts: %s", r.err, receiptsText(r.res.Receipts))
	}

	// The first holder renews no more; a second process waits the lease
	// out and takes it over.
	ctx := context.Background()
	const second = "hactl/second/x/1/cd"
	var taker *actions.Lock
	testenv.Poll(t, 30*time.Second, func() (bool, error) {
		lk, err := actions.AcquireLock(ctx, e.cs, e.ns, "etcd", actions.LockOptions{Identity: second, Duration: dur})
		if errors.Is(err, actions.ErrLockHeld) {
			return false, nil
		}
		taker = lk
		return err == nil, err
	})
	defer taker.Release(ctx)
	if taker.TookOver != x.Identity {
		t.Fatalf("took over %q, want the first holder %q", taker.TookOver, x.Identity)
	}

	// The first holder wakes: its dial completes.
	h.thaw()
	thawed = true
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute): // a bound on a hung run, not a wait
		t.Fatal("the first run did not end")
	}

	t.Logf("the first run: %v\nreceipts:%s", r.err, receiptsText(r.res.Receipts))
	if n := h.written.Load(); n != 0 {
		t.Errorf("the first holder wrote %d bytes to the member after its lease was taken over", n)
	}
	if vs := e.voters(); len(vs) != 3 {
		t.Errorf("members after the first holder's run: %v, want the 3 it started with", vs)
	} else if _, ok := vs[oldID]; !ok {
		t.Errorf("member %s (%s) was removed after the first holder lost its lease", oldID, target)
	}
	if !errors.Is(r.err, actions.ErrLockLost) {
		t.Errorf("the first run ended with %v, want it to report the lock lost", r.err)
	}
	var notSent bool
	for _, rc := range r.res.Receipts {
		if rc.Step != model.StepRemoveMember {
			continue
		}
		switch {
		case rc.Outcome == model.OutcomeRefused && strings.Contains(rc.Detail, "not sent") && strings.Contains(rc.Detail, "lock lost"):
			notSent = true
		default:
			t.Errorf("removal receipt %s: %s", rc.Outcome, rc.Detail)
		}
	}
	if !notSent {
		t.Errorf("no receipt says the removal was not sent for the lost lock:%s", receiptsText(r.res.Receipts))
	}
	if f, _ := actions.ReadLock(ctx, e.cs, e.ns, "etcd"); f == nil || f.Holder != second {
		t.Errorf("lease holder %+v, want the second process", f)
	}
}
