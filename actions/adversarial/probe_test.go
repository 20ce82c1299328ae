package adversarial

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/model"
)

// probe reads each member of a cluster on its own, four times a second,
// beside the round: a linearizable read answered by any member means the
// cluster had quorum at that moment. It also keeps every distinct member
// list it saw, in order.
type probe struct {
	cluster string
	loop    *e2esuite.Loop
	// clients are the loop's (closed once it stopped).
	clients []*etcdengine.Client

	mu        sync.Mutex
	start     time.Time
	lastOK    time.Time
	maxOutage time.Duration
	outageAt  time.Time
	ticks     int
	okTicks   int
	lists     [][]model.Peer
}

func startProbe(cluster string) *probe {
	now := time.Now()
	p := &probe{cluster: cluster, clients: make([]*etcdengine.Client, 3), start: now, lastOK: now}
	p.loop = e2esuite.StartLoop(250*time.Millisecond, p.tick)
	return p
}

// tick reads each member once, at once, and the member list from one
// that answered.
func (p *probe) tick() {
	var wg sync.WaitGroup
	oks := make([]bool, 3)
	for i := range p.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if p.clients[i] == nil {
				c, err := s.OpenMember(ctx, fmt.Sprintf("%s-%d", p.cluster, i), 2*time.Second)
				if err != nil {
					return
				}
				p.clients[i] = c
			}
			if _, err := p.clients[i].KV().Get(ctx, e2esuite.SentinelKey); err != nil {
				_ = p.clients[i].Close()
				p.clients[i] = nil
				return
			}
			oks[i] = true
		}()
	}
	wg.Wait()
	var list []model.Peer
	for i, ok := range oks {
		if ok {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			l, err := p.clients[i].MemberList(ctx)
			cancel()
			if err == nil {
				list = l
				break
			}
		}
	}
	p.record(oks[0] || oks[1] || oks[2], list)
}

func (p *probe) record(ok bool, list []model.Peer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.ticks++
	if !ok {
		return
	}
	p.okTicks++
	if gap := now.Sub(p.lastOK); gap > p.maxOutage {
		p.maxOutage, p.outageAt = gap, p.lastOK
	}
	p.lastOK = now
	if list != nil && (len(p.lists) == 0 || listKey(p.lists[len(p.lists)-1]) != listKey(list)) {
		p.lists = append(p.lists, list)
	}
}

// stop ends the loop (once; later calls do nothing); the outage still
// open counts too.
func (p *probe) stop() {
	if !p.loop.Stop() {
		return
	}
	for _, c := range p.clients {
		if c != nil {
			_ = c.Close()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if gap := time.Since(p.lastOK); gap > p.maxOutage {
		p.maxOutage, p.outageAt = gap, p.lastOK
	}
}

func (p *probe) String() string {
	return fmt.Sprintf("%d of %d probes answered; longest time without a linearizable read: %s (from %s); %d member lists",
		p.okTicks, p.ticks, p.maxOutage.Round(time.Millisecond), p.outageAt.Format("15:04:05.000"), len(p.lists))
}

// listKey names a member list: its members' IDs, learners marked.
func listKey(l []model.Peer) string {
	var ids []string
	for _, m := range l {
		id := m.ID
		if m.IsLearner {
			id += "(learner)"
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// memberChange is one change between two member lists the probe saw.
type memberChange struct {
	step model.StepKind
	id   string
}

// changes lists every member added, removed or promoted between the
// lists the probe saw, in order.
func (p *probe) changes() []memberChange {
	var out []memberChange
	for i := 1; i < len(p.lists); i++ {
		before, after := map[string]bool{}, map[string]bool{}
		for _, m := range p.lists[i-1] {
			before[m.ID] = m.IsLearner
		}
		for _, m := range p.lists[i] {
			after[m.ID] = m.IsLearner
		}
		for id := range before {
			if _, ok := after[id]; !ok {
				out = append(out, memberChange{model.StepRemoveMember, id})
			}
		}
		for id, learner := range after {
			wasLearner, ok := before[id]
			switch {
			case !ok:
				out = append(out, memberChange{model.StepAddLearner, id})
			case wasLearner && !learner:
				out = append(out, memberChange{model.StepPromoteLearner, id})
			}
		}
	}
	return out
}
