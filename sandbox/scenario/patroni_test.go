package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/sandbox/fault"
)

// fakeMember answers GET /patroni the way Patroni's REST API does, from a
// status the test scripts. Its address is a loopback address of its own on
// Patroni's port, the third octet (9) one the runner never hands out.
type fakeMember struct {
	mu    sync.Mutex
	st    PatroniStatus
	gets  int
	onGet func(m *fakeMember) // called with mu held, after gets is counted
}

func (m *fakeMember) set(role string, timeline int64) {
	m.st.Role, m.st.State, m.st.Timeline = role, "running", timeline
}

func (m *fakeMember) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.gets++
	if m.onGet != nil {
		m.onGet(m)
	}
	b, _ := json.Marshal(m.st)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// serveFakes serves each member on a loopback address of its own, on
// Patroni's port, and returns the addresses by pod. The third octet is
// one the runner never hands out (it uses 1 to 3), picked at random and
// picked again when another test holds it.
func serveFakes(t *testing.T, members map[string]*fakeMember) map[string]string {
	t.Helper()
	var lastErr error
	for try := 0; try < 20; try++ {
		octet := 10 + rand.IntN(240)
		addrs := map[string]string{}
		var srvs []*http.Server
		n := 0
		for pod, m := range members {
			n++
			addr := fmt.Sprintf("127.254.%d.%d", octet, n)
			ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(patroniPort)))
			if err != nil {
				lastErr = err
				break
			}
			srv := &http.Server{Handler: m}
			go srv.Serve(ln)
			srvs = append(srvs, srv)
			addrs[pod] = addr
		}
		t.Cleanup(func() {
			for _, srv := range srvs {
				srv.Close()
			}
		})
		if len(addrs) == len(members) {
			return addrs
		}
	}
	t.Fatalf("no free loopback address for the members: %v", lastErr)
	return nil
}

// TestPromoteRogueOutlastsAnUndonePromotion: a promotion that Patroni
// undoes (the rogue answers as a primary for a moment, then runs as a
// replica again on the new timeline, as when pg_ctl promote lands in the
// middle of an HA loop) is promoted again once the rogue runs as a
// replica, without waiting out the attempt; a rogue that stays a primary
// while the rest does not hold yet is not promoted again (pg_ctl promote
// refuses a primary); a rogue that never holds stops after three
// promotions with an error.
func TestPromoteRogueOutlastsAnUndonePromotion(t *testing.T) {
	const loop = 400 * time.Millisecond
	for _, tc := range []struct {
		name         string
		undone       int           // how many promotions Patroni undoes
		leaderLate   time.Duration // the leader answers as a replica until then
		wantPromotes int
		wantErr      bool
	}{
		{name: "held at once", wantPromotes: 1},
		{name: "first undone", undone: 1, wantPromotes: 2},
		{name: "always undone", undone: 99, wantPromotes: 3, wantErr: true},
		{name: "the rest holds late", leaderLate: 6 * loop, wantPromotes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader, rogue := &fakeMember{}, &fakeMember{}
			leader.set("primary", 1)
			leader.st.Pause = true
			if tc.leaderLate > 0 {
				leader.set("replica", 1)
				late := time.Now().Add(tc.leaderLate)
				leader.onGet = func(m *fakeMember) {
					if time.Now().After(late) {
						m.set("primary", 1)
						m.onGet = nil
					}
				}
			}
			rogue.set("replica", 1)
			rogue.st.Pause = true
			addrs := serveFakes(t, map[string]*fakeMember{"c-0": leader, "c-1": rogue})

			var mu sync.Mutex
			promotes := 0
			env := Env{
				Address: func(pod string) (string, error) {
					if a, ok := addrs[pod]; ok {
						return a, nil
					}
					return "", errors.New("no such pod " + pod)
				},
				Break: func(_ context.Context, pod string, kind fault.Kind, _ []string) error {
					if pod != "c-1" || kind != fault.Promote {
						t.Errorf("Break(%s, %v): only the rogue's promotion is expected", pod, kind)
						return errors.New("unexpected fault")
					}
					mu.Lock()
					promotes++
					n := promotes
					mu.Unlock()
					rogue.mu.Lock()
					defer rogue.mu.Unlock()
					if rogue.st.primary() {
						t.Errorf("promotion %d of a rogue that runs as a primary", n)
						return errors.New("pg_ctl: cannot promote server; server is not in standby mode")
					}
					rogue.set("primary", rogue.st.Timeline+1)
					rogue.onGet = nil
					if n <= tc.undone {
						// A quarter of a loop later Patroni's HA loop
						// restarts it as a replica on the new timeline.
						at := time.Now().Add(loop / 4)
						rogue.onGet = func(m *fakeMember) {
							if time.Now().After(at) {
								m.set("replica", m.st.Timeline)
								m.onGet = nil
							}
						}
					}
					return nil
				},
				Logf: t.Logf,
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			err := promoteRogue(ctx, env, "c", "c-1", []string{"c-0", "c-1"}, func(sts map[string]PatroniStatus) bool {
				return sts["c-0"].primary() && sts["c-1"].Pause
			}, loop)
			took := time.Since(start)
			if ctx.Err() != nil {
				t.Fatalf("promoteRogue ran into the test's deadline: %v", err)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("promoteRogue: %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "undid its promotion") {
				t.Errorf("the error does not say the promotion was undone: %v", err)
			}
			mu.Lock()
			got := promotes
			mu.Unlock()
			if got != tc.wantPromotes {
				t.Errorf("%d promotions, want %d", got, tc.wantPromotes)
			}
			rogue.mu.Lock()
			primary := rogue.st.primary()
			rogue.mu.Unlock()
			if primary == tc.wantErr {
				t.Errorf("the rogue is a primary: %v, after promoteRogue returned %v", primary, err)
			}
			if tc.undone > 0 && took >= time.Duration(min(tc.undone, 3))*5*loop {
				t.Errorf("took %s: an undone promotion waited out its attempt instead of being seen", took)
			}
		})
	}
}
