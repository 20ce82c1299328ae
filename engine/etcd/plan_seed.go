package etcd

import (
	"fmt"

	"github.com/hactl-dev/hactl/model"
)

// seed plans capturing a seed generation.
func (c etcd) seed() {
	c.Decision().Flow = model.FlowSeed
	if !c.engineGates("") {
		return
	}
	if c.Analysis().Frontier == nil {
		c.Block(model.CodeNoSeedSource, "", "", "no real leader frontier (%s): a source's freshness cannot be judged", c.Analysis().NoFrontierBecause)
		return
	}
	src := c.seedSource()
	if src == nil {
		return
	}
	if c.Options().SeedStore == "" {
		c.Block(model.CodeSeedStoreMissing, src.Name, "", "no seed store is configured: seed generations need an artifact store")
	}
	c.Step(model.Step{Kind: model.StepCaptureSnapshot, Member: src.Name, MemberID: src.Engine.MemberID,
		Detail: fmt.Sprintf("capture a snapshot of %s (member %s, applied index %d)", src.Name, src.Engine.MemberID, src.Engine.RaftApplied)})
	c.Step(model.Step{Kind: model.StepUpload, Member: src.Name, Detail: "upload the files, then the manifest last"})
	c.Step(model.Step{Kind: model.StepPublish, Member: src.Name, Detail: "publish the generation once the manifest verifies"})
}

// seedSource returns the member named as the source, if it may be one,
// or chooses one; nil (with a blocker) when there is none.
func (c etcd) seedSource() *model.Member {
	if c.Intent().Member != "" {
		src := c.Member(c.Intent().Member)
		switch {
		case src == nil:
			c.Block(model.CodeMemberNotFound, c.Intent().Member, "", "%s/%s has no member %q (members: %s)", c.Observation().Cluster.Namespace, c.Observation().Cluster.Name, c.Intent().Member, c.MemberNames())
			return nil
		case src.Phase != model.PhaseMember:
			c.Block(model.CodeNoSeedSource, src.Name, "", "%s is %s, not a voter within the lag threshold: it cannot be a seed source", src.Name, src.Phase)
			return nil
		}
		return src
	}
	var src *model.Member
	for _, h := range c.healthyVoters() {
		isLeader := h.Engine.MemberID == c.Analysis().LeaderID
		if src == nil {
			src = h
			continue
		}
		srcLeader := src.Engine.MemberID == c.Analysis().LeaderID
		// Followers first, then the lowest ordinal. Lag within the
		// threshold is not a preference: it moves between two
		// observations, and the source is fenced under the lock.
		if (srcLeader && !isLeader) || (srcLeader == isLeader && h.Ordinal < src.Ordinal) {
			src = h
		}
	}
	if src == nil {
		c.Block(model.CodeNoSeedSource, "", "", "no voter is within the lag threshold of the leader's frontier")
	}
	return src
}
