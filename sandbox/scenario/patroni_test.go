package scenario

import (
	"context"
	"encoding/json"
	"errors"
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

func serveFake(t *testing.T, addr string, m *fakeMember) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(patroniPort)))
	if err != nil {
		t.Fatalf("listening as a member on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestPromoteRogueOutlastsAnUndonePromotion: a promotion that Patroni
// undoes (the rogue answers as a primary for a moment, then runs as a
// replica again, as when pg_ctl promote lands in the middle of an HA
// loop) is promoted again once the rogue runs as a replica; a primary
// that has held is not promoted again (pg_ctl promote refuses a primary);
// a rogue that never holds stops after three promotions with an error.
func TestPromoteRogueOutlastsAnUndonePromotion(t *testing.T) {
	const loop = 300 * time.Millisecond
	for _, tc := range []struct {
		name         string
		undone       int // how many promotions Patroni undoes
		wantPromotes int
		wantErr      bool
	}{
		{name: "held at once", undone: 0, wantPromotes: 1},
		{name: "first undone", undone: 1, wantPromotes: 2},
		{name: "always undone", undone: 99, wantPromotes: 3, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader, rogue := &fakeMember{}, &fakeMember{}
			leader.set("primary", 1)
			leader.st.Pause = true
			rogue.set("replica", 1)
			rogue.st.Pause = true
			addrs := map[string]string{"c-0": "127.254.9.1", "c-1": "127.254.9.2"}
			serveFake(t, addrs["c-0"], leader)
			serveFake(t, addrs["c-1"], rogue)

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
						return errors.New("pg_ctl: cannot promote server; server is not in standby mode")
					}
					rogue.set("primary", rogue.st.Timeline+1)
					rogue.onGet = nil
					if n <= tc.undone {
						// Two reads see the primary, then Patroni's HA
						// loop restarts it as a replica on the new timeline.
						seen := rogue.gets
						rogue.onGet = func(m *fakeMember) {
							if m.gets > seen+2 {
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
			err := promoteRogue(ctx, env, "c", "c-1", []string{"c-0", "c-1"}, func(sts map[string]PatroniStatus) bool {
				return sts["c-0"].primary() && sts["c-1"].Pause
			}, loop)
			if ctx.Err() != nil {
				t.Fatalf("promoteRogue ran into the test's deadline: %v", err)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("promoteRogue: %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "c-1 a primary for two HA loops") {
				t.Errorf("the error does not say what it waited for: %v", err)
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
		})
	}
}
