package verdict

import (
	"fmt"
	"sort"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// Evaluate derives phases and lag (see Derive) and computes the verdict
// (see Compute) in one pass.
func Evaluate(obs model.Observation, now time.Time, opts model.VerdictOptions) (model.Observation, model.Verdict) {
	s := analyze(obs, now, opts)
	return s.obs, s.verdict()
}

// EvaluateAll is Evaluate and Analyze in one pass: the derived
// observation, the verdict, and the cluster-wide facts it was built on
// (what Analyze returns), for callers that show all three.
func EvaluateAll(obs model.Observation, now time.Time, opts model.VerdictOptions) (model.Observation, model.Verdict, model.Analysis) {
	s := analyze(obs, now, opts)
	a := s.a // as Analyze returns it: taken before the verdict reads s
	return s.obs, s.verdict(), a
}

// Compute returns the verdict on obs at now.
//
// ControlReady holds when no reason of ImpactControl was found;
// FailoverReady when, in addition, no reason of ImpactFailover was found.
// The impact of each code is model.ReasonCode.Impact. Reasons are sorted
// by impact (most severe first), then code, then member, then detail.
func Compute(obs model.Observation, now time.Time, opts model.VerdictOptions) model.Verdict {
	return analyze(obs, now, opts).verdict()
}

// reasons collects the verdict's reasons, each once.
type reasons = model.Reasons

func (s *state) verdict() model.Verdict {
	var r reasons
	s.freshness(&r)
	s.pods(&r)
	s.endpoints(&r)
	s.certs(&r)
	s.rules().reasons(s, &r)
	s.unprobed(&r)
	return s.finish(r)
}

// unprobed: without probes nothing measured lag, so no verdict may claim
// failover readiness; when no reason already denies it, the cluster's
// lag is unknown.
func (s *state) unprobed(r *reasons) {
	if s.obs.EngineProbed {
		return
	}
	for _, x := range r.List {
		if x.Code.Impact() >= model.ImpactFailover {
			return
		}
	}
	r.Add(model.ReasonLagUnknown, "", "engine not probed")
}

// finish sorts the reasons and derives the two verdicts from them.
func (s *state) finish(r reasons) model.Verdict {
	v := model.Verdict{ControlReady: true, FailoverReady: true, Reasons: r.List}
	if v.Reasons == nil {
		v.Reasons = []model.Reason{}
	}
	SortReasons(v.Reasons)
	for _, x := range v.Reasons {
		switch x.Code.Impact() {
		case model.ImpactControl:
			v.ControlReady = false
			v.FailoverReady = false
		case model.ImpactFailover:
			v.FailoverReady = false
		}
	}
	return v
}

// SortReasons orders reasons as a Verdict holds them: impact descending,
// then code, member and detail ascending.
func SortReasons(rs []model.Reason) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if ia, ib := a.Code.Impact(), b.Code.Impact(); ia != ib {
			return ia > ib
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Member != b.Member {
			return a.Member < b.Member
		}
		return a.Detail < b.Detail
	})
}

// --- Kubernetes-level reasons ---

func (s *state) freshness(r *reasons) {
	at := s.obs.At
	switch {
	case at.IsZero():
		r.Add(model.ReasonObservationStale, "", "observation carries no time")
	case s.now.Sub(at) > s.opts.StaleAfter:
		r.Add(model.ReasonObservationStale, "", "observed %s ago, older than %s", model.RoundAge(s.now.Sub(at)), s.opts.StaleAfter)
	}
}

func (s *state) pods(r *reasons) {
	for _, v := range s.views {
		m := v.m
		if m.PVC != nil && m.PVC.Phase == "Pending" {
			r.Add(model.ReasonPVCPending, m.Name, "claim %s is Pending", m.PVC.Name)
		}
		p := m.Pod
		switch {
		case p == nil:
			r.Add(model.ReasonPodMissing, m.Name, "StatefulSet wants ordinal %d; no pod exists", m.Ordinal)
		case p.DeletionMarked:
			r.Add(model.ReasonPodTerminating, m.Name, "pod %s is marked for deletion", p.Name)
		case p.Waiting == model.WaitingCrashLoop:
			r.Add(model.ReasonPodCrashLooping, m.Name, "%s, %d restarts", orDefault(p.WaitingReason, "CrashLoopBackOff"), p.Restarts)
		case !v.started:
			r.Add(model.ReasonPodNeverStarted, m.Name, "%s", neverStartedDetail(p))
		case !p.Ready:
			if p.Waiting != model.WaitingNone {
				r.Add(model.ReasonPodNotReady, m.Name, "container waiting (%s), %d restarts", orDefault(p.WaitingReason, p.Waiting.String()), p.Restarts)
			} else {
				r.Add(model.ReasonPodNotReady, m.Name, "container running, readiness probe failing")
			}
		}
	}
}

// certs reports the serving certificates the members presented in their
// probes' TLS handshakes that have expired or expire within CertWarn,
// whatever the engine.
func (s *state) certs(r *reasons) {
	for _, v := range s.views {
		e := v.m.Engine
		if e == nil {
			continue
		}
		for i := range e.ServingCerts {
			s.cert(r, v.m.Name, &e.ServingCerts[i])
		}
	}
}

// cert reports member's serving certificate c when it has expired or
// expires within CertWarn.
func (s *state) cert(r *reasons, member string, c *model.CertFacts) {
	if c.NotAfter.IsZero() {
		return
	}
	left := c.NotAfter.Sub(s.now)
	what := fmt.Sprintf("the serving certificate on port %d (%s, issued by %s)", c.Port, orDefault(c.Subject, "no subject"), orDefault(c.Issuer, "no issuer"))
	switch {
	case !c.NotBefore.IsZero() && s.now.Before(c.NotBefore):
		r.Add(model.ReasonCertNotYetValid, member, "%s is not valid until %s, in %s: clients that verify it refuse it; check this machine's clock and the member's, then the certificate's dates", what, c.NotBefore.UTC().Format(time.RFC3339), days(c.NotBefore.Sub(s.now)))
	case left <= 0:
		r.Add(model.ReasonCertExpired, member, "%s expired %s, %s ago: clients that verify it refuse to connect; renew it", what, c.NotAfter.UTC().Format(time.RFC3339), days(-left))
	case left < s.opts.CertWarn:
		r.Add(model.ReasonCertExpiring, member, "%s expires %s, in %s (warning window %s)", what, c.NotAfter.UTC().Format(time.RFC3339), days(left), days(s.opts.CertWarn))
	}
}

// days says d in days, or hours and minutes under two days.
func days(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	return d.Round(time.Minute).String()
}

func neverStartedDetail(p *model.PodFacts) string {
	switch p.Waiting {
	case model.WaitingPullFailure:
		d := "image pull failing"
		if p.PullFailure != model.PullFailureNone {
			d += " (" + p.PullFailure.String() + ")"
		}
		if p.WaitingReason != "" {
			d += ": " + p.WaitingReason
		}
		return d
	case model.WaitingUnscheduled:
		return "not scheduled to a node"
	case model.WaitingNone:
		if p.Phase != "" {
			return "container never started (pod " + p.Phase + ")"
		}
		return "container never started"
	}
	return "container never started: " + orDefault(p.WaitingReason, p.Waiting.String())
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (s *state) endpoints(r *reasons) {
	e := s.obs.ClientEndpoints
	switch {
	case e == nil && s.obs.Cluster.ManagedBy != nil && s.obs.Cluster.ManagedBy.NoService:
		// Its clients are handed the members' addresses (kubeadm's API
		// server: --etcd-servers): no Service is expected.
	case e == nil:
		r.Add(model.ReasonClientEndpointsMissing, "", "no client Service found")
	case e.Ready == 0:
		r.Add(model.ReasonClientEndpointsMissing, "", "Service %s has no ready endpoints (0 of %d)", e.Service, e.Total)
	}
}
