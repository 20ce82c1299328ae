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

// clusterKey identifies one cluster incarnation across observations: a
// cluster recreated under the same name (another UID) is another key, so
// it is never taken for probed before its own first probe.
func clusterKey(c model.ClusterFacts) string { return c.Namespace + "/" + c.Name + "/" + c.UID }

// forget drops every cluster obs does not hold, when obs are all the
// clusters in scope (all): the memory keeps no cluster that is gone.
func (p *probeMemory) forget(obs []model.Observation, all bool) {
	if !all {
		return
	}
	seen := make(map[string]bool, len(obs))
	for _, o := range obs {
		seen[clusterKey(o.Cluster)] = true
	}
	for k := range p.clusters {
		if !seen[k] {
			delete(p.clusters, k)
		}
	}
}

// remember keeps the facts of every cluster obs probed, unless the memory
// holds a probe of that cluster that began later (a slow probe finishing
// after a newer one never replaces it); all says obs are every cluster in
// scope, and the others are forgotten.
func (p *probeMemory) remember(obs []model.Observation, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clusters == nil {
		p.clusters = map[string]probedCluster{}
	}
	p.forget(obs, all)
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
// was recreated since, or that was not there, stays unasked; all says
// obs are every cluster in scope, and the others are forgotten.
func (p *probeMemory) graft(obs []model.Observation, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forget(obs, all)
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
