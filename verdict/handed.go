package verdict

import "github.com/hactl-dev/hactl/model"

// handedRules run the rules of an engine that keeps them in its own
// package (model.VerdictRules, handed in through Options.Rules): the
// engine judges its members' facts; the disruption budget and the spread
// over nodes are checked here, against the tolerance it reports, unless
// it judged them itself (Judgement.DisruptionJudged).
type handedRules struct{ r model.VerdictRules }

func (h handedRules) threshold(o model.VerdictOptions, c model.ClusterFacts) uint64 {
	return h.r.LagThreshold(thresholds(o), c)
}

func (h handedRules) analyze(s *state) {
	in := model.JudgeInput{
		Observation:     s.obs,
		Now:             s.now,
		PodPhases:       make([]model.Phase, len(s.views)),
		LagThreshold:    h.threshold(s.opts, s.obs.Cluster),
		BootstrapWindow: s.opts.BootstrapWindow,
		Thresholds:      thresholds(s.opts),
	}
	for i, v := range s.views {
		if ph, ok := podPhase(v); ok {
			in.PodPhases[i] = ph
		}
	}
	j := h.r.Judge(in)
	s.judged = j.Reasons
	s.a.Formed, s.a.FormedBecause = j.Formed, j.FormedBecause
	s.a.ClusterID, s.a.ClusterIDs = j.ClusterID, j.ClusterIDs
	s.a.MemberList, s.a.VotersFromMemberList = j.MemberList, j.VotersFromMemberList
	s.disruptionJudged = j.DisruptionJudged
	s.a.Voters, s.a.Quorum, s.a.Tolerance, s.a.AnsweringVoters = j.Voters, j.Quorum, j.Tolerance, j.AnsweringVoters
	s.a.LeaderID, s.a.LeaderMember = j.LeaderID, j.LeaderMember
	s.a.Frontier, s.a.NoFrontierBecause = j.Frontier, j.NoFrontierBecause
	for i, v := range s.views {
		ph := model.PhaseUnknown
		if i < len(j.Phases) && j.Phases[i] != "" {
			ph = j.Phases[i]
		}
		var lag *int64
		if i < len(j.Lags) {
			lag = j.Lags[i]
		}
		v.phase, v.lag = ph, lag
		v.m.Phase, v.m.Lag = ph, lag
		v.learner = i < len(j.Learners) && j.Learners[i]
		if j.Diverged != nil {
			v.diverged = i < len(j.Diverged) && j.Diverged[i]
		} else {
			v.diverged = ph == model.PhaseDiverged
		}
	}
}

func (h handedRules) reasons(s *state, r *reasons) {
	if !s.disruptionJudged {
		s.pdb(r)
		s.colocation(r)
	}
	for _, x := range s.judged {
		r.Add(x.Code, x.Member, "%s", x.Detail)
	}
}
