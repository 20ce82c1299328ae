package status

import (
	"sync"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// probeMemory keeps the engine facts of the last probe of each cluster,
// by member incarnation, so that a read between probes (from the caches
// alone, as watch events bring them) shows the members as they last
// answered and is judged once, with them, here: no face re-evaluates a
// verdict. A Watcher holds one for its rounds.
type probeMemory struct {
	mu       sync.Mutex
	clusters map[string]probedCluster
}

// probedCluster is one cluster's last probe: when its observation began,
// and each member's answer by incarnation.
type probedCluster struct {
	at      time.Time
	members map[memberKey]model.EngineFacts
}

// memberKey names one member incarnation: a pod recreated under the same
// name is another key, so its predecessor's facts are never reused.
type memberKey struct{ member, podUID string }

// clusterKey identifies a cluster across observations.
func clusterKey(c model.ClusterFacts) string { return c.Namespace + "/" + c.Name }

// remember keeps the facts of every cluster obs probed, unless the memory
// holds a probe of that cluster that began later (a slow probe finishing
// after a newer one never replaces it).
func (p *probeMemory) remember(obs []model.Observation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clusters == nil {
		p.clusters = map[string]probedCluster{}
	}
	for _, o := range obs {
		if !o.EngineProbed {
			continue
		}
		k := clusterKey(o.Cluster)
		if old, ok := p.clusters[k]; ok && old.at.After(o.At) {
			continue
		}
		pc := probedCluster{at: o.At, members: map[memberKey]model.EngineFacts{}}
		for _, m := range o.Members {
			if m.Pod != nil && m.Engine != nil {
				pc.members[memberKey{m.Name, m.Pod.UID}] = *m.Engine
			}
		}
		p.clusters[k] = pc
	}
}

// graft puts the remembered facts into observations read without a
// probe: each member whose pod is the incarnation that answered gets its
// answer, and a cluster probed before reads as probed. A member whose pod
// was recreated since, or that was not there, stays unasked.
func (p *probeMemory) graft(obs []model.Observation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range obs {
		o := &obs[i]
		pc, ok := p.clusters[clusterKey(o.Cluster)]
		if !ok {
			continue
		}
		o.EngineProbed = true
		for j := range o.Members {
			m := &o.Members[j]
			if m.Pod == nil {
				continue
			}
			if f, ok := pc.members[memberKey{m.Name, m.Pod.UID}]; ok {
				m.Engine = &f
			}
		}
	}
}
