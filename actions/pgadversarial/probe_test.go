package pgadversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hactl-dev/hactl/internal/e2esuite"
)

// sample is one member's own answer to GET /patroni, read on its loopback
// address (never through hactl, the API server or a port-forward).
type sample struct {
	At       time.Time
	Member   string
	PodUID   string
	Role     string
	State    string
	Timeline int
	// Start is the member's postmaster_start_time.
	Start string
}

// primary reports whether the member answered as the running, writable
// primary.
func (s sample) primary() bool {
	return (s.Role == "master" || s.Role == "primary") && s.State == "running"
}

// rebuilding reports whether the member answered as throwing its data
// away or copying it again (a reinitialize, or a new volume's bootstrap).
func (s sample) rebuilding() bool {
	return s.State == "creating replica" || s.Role == "uninitialized"
}

// timeline is every answer a probe loop read, per member in order.
type timeline struct {
	mu      sync.Mutex
	samples map[string][]sample
	ticks   int
}

func (tl *timeline) add(s sample) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.samples == nil {
		tl.samples = map[string][]sample{}
	}
	tl.samples[s.Member] = append(tl.samples[s.Member], s)
}

// lastBefore is the member's last answer at or before t.
func (tl *timeline) lastBefore(member string, t time.Time) (sample, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	ss := tl.samples[member]
	i := sort.Search(len(ss), func(i int) bool { return ss[i].At.After(t) })
	if i == 0 {
		return sample{}, false
	}
	return ss[i-1], true
}

// primaryAt reports whether member was the primary at t by its own last
// answer before t (a member frozen since still counts as what it last
// said: its PostgreSQL keeps running).
func (tl *timeline) primaryAt(member string, t time.Time) (sample, bool) {
	s, ok := tl.lastBefore(member, t)
	return s, ok && s.primary()
}

// primaryDuring reports whether member answered as primary at any time
// in [from, to] (or was primary by its last answer before from).
func (tl *timeline) primaryDuring(member string, from, to time.Time) (sample, bool) {
	if s, ok := tl.primaryAt(member, from); ok {
		return s, true
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, s := range tl.samples[member] {
		if !s.At.Before(from) && !s.At.After(to) && s.primary() {
			return s, true
		}
	}
	return sample{}, false
}

// primaryChange is a moment the running primary became another member.
type primaryChange struct {
	At       time.Time
	From, To string
}

// changes lists every change of the one running primary, by the members'
// own answers in time order: a member answering as primary while the last
// one known was another.
func (tl *timeline) changes() []primaryChange {
	tl.mu.Lock()
	var all []sample
	for _, ss := range tl.samples {
		all = append(all, ss...)
	}
	tl.mu.Unlock()
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
	var out []primaryChange
	cur := ""
	for _, s := range all {
		if !s.primary() || s.Member == cur {
			continue
		}
		if cur != "" {
			out = append(out, primaryChange{At: s.At, From: cur, To: s.Member})
		}
		cur = s.Member
	}
	return out
}

// rebuild is a member seen rebuilding its data.
type rebuild struct {
	At     time.Time
	Member string
	PodUID string
}

// rebuilds lists the first answer of each rebuild of each member (the
// answers between a running one and the next that say it rebuilds).
func (tl *timeline) rebuilds() []rebuild {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []rebuild
	for m, ss := range tl.samples {
		in := false
		for _, s := range ss {
			switch {
			case s.rebuilding() && !in:
				out = append(out, rebuild{At: s.At, Member: m, PodUID: s.PodUID})
				in = true
			case s.State == "running":
				in = false
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func (tl *timeline) String() string {
	tl.mu.Lock()
	n := 0
	var ms []string
	for m, ss := range tl.samples {
		n += len(ss)
		ms = append(ms, fmt.Sprintf("%s:%d", m, len(ss)))
	}
	ticks := tl.ticks
	tl.mu.Unlock()
	sort.Strings(ms)
	return fmt.Sprintf("%d ticks, %d answers (%s), %d primary changes, %d rebuilds", ticks, n, strings.Join(ms, " "),
		len(tl.changes()), len(tl.rebuilds()))
}

// startProbe reads every member's GET /patroni on its own loopback
// address about four times a second into tl, until stopped.
func startProbe(tl *timeline) *e2esuite.Loop {
	return e2esuite.StartLoop(250*time.Millisecond, func() { probeOnce(tl) })
}

var probeClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{
	DialContext:       (&net.Dialer{Timeout: time.Second}).DialContext,
	DisableKeepAlives: true,
}}

// probeOnce reads every member once, at once.
func probeOnce(tl *timeline) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	ms, err := s.SB.Members(ctx)
	cancel()
	tl.mu.Lock()
	tl.ticks++
	tl.mu.Unlock()
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, m := range ms {
		if m.Namespace != namespace || !strings.HasPrefix(m.Name, cluster+"-") {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if smp, ok := readPatroni(m.Address, m.Name); ok {
				smp.PodUID = string(m.UID)
				tl.add(smp)
			}
		}()
	}
	wg.Wait()
}

// readPatroni reads GET /patroni of the member at addr; the sample's time
// is when the request was sent (the answer describes a moment after it).
func readPatroni(addr, member string) (sample, bool) {
	at := time.Now()
	resp, err := probeClient.Get("http://" + net.JoinHostPort(addr, "8008") + "/patroni")
	if err != nil {
		return sample{}, false
	}
	defer resp.Body.Close()
	var doc struct {
		Role     string `json:"role"`
		State    string `json:"state"`
		Timeline int    `json:"timeline"`
		Start    string `json:"postmaster_start_time"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return sample{}, false
	}
	return sample{At: at, Member: member, Role: doc.Role, State: doc.State, Timeline: doc.Timeline, Start: doc.Start}, true
}
