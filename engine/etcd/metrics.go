package etcd

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	nethttp "net/http"
	"strconv"

	"github.com/prometheus/common/expfmt"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/model"
)

// maxMetrics bounds how much of a metrics page is read.
const maxMetrics = 4 << 20

// readMetrics reads what member t's plaintext metrics listener
// (t.MetricsPort) says, within ctx: nil when it cannot be read or names
// no member. A member's client port may ask for a certificate hactl was
// not given (kubeadm's etcd); its metrics listener asks for none.
func readMetrics(ctx context.Context, t engine.Target, o engine.ProbeOptions) *model.MetricsFacts {
	if t.MetricsPort <= 0 {
		return nil
	}
	tr := &nethttp.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return o.Dial(ctx, t.Namespace, t.Pod, t.MetricsPort)
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	cl := &nethttp.Client{Transport: tr, Timeout: o.Timeout}
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, "http://"+t.Pod+":"+strconv.Itoa(t.MetricsPort)+"/metrics", nil)
	if err != nil {
		return nil
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != nethttp.StatusOK {
		return nil
	}
	m := parseMetrics(io.LimitReader(resp.Body, maxMetrics))
	if m == nil {
		return nil
	}
	m.Port = t.MetricsPort
	return m
}

// parseMetrics reads etcd's own series from a Prometheus text page: nil
// when it does not parse or names no member (etcd_server_id).
func parseMetrics(r io.Reader) *model.MetricsFacts {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil
	}
	// first is the family's first sample: its value and labels.
	first := func(name string) (float64, map[string]string, bool) {
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return 0, nil, false
		}
		s := f.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		switch {
		case s.GetGauge() != nil:
			return s.GetGauge().GetValue(), labels, true
		case s.GetCounter() != nil:
			return s.GetCounter().GetValue(), labels, true
		case s.GetUntyped() != nil:
			return s.GetUntyped().GetValue(), labels, true
		}
		return 0, labels, true
	}
	m := &model.MetricsFacts{}
	if _, l, ok := first("etcd_server_id"); ok {
		m.MemberID = l["server_id"]
	}
	if m.MemberID == "" {
		return nil
	}
	flag := func(name string) bool { v, _, _ := first(name); return v == 1 }
	m.IsLeader, m.HasLeader, m.IsLearner = flag("etcd_server_is_leader"), flag("etcd_server_has_leader"), flag("etcd_server_is_learner")
	v, _, _ := first("etcd_server_proposals_applied_total")
	m.Applied = counter(v)
	v, _, _ = first("etcd_server_proposals_committed_total")
	m.Committed = counter(v)
	if _, l, ok := first("etcd_server_version"); ok {
		m.Version = l["server_version"]
	}
	return m
}

// counter is a counter's value as a whole number (0 when it is not one).
func counter(v float64) uint64 {
	if v < 0 || v >= math.MaxUint64 || math.IsNaN(v) {
		return 0
	}
	return uint64(v)
}

// MetricsSummary is what a metrics listener said of a member, and what
// stays unknown without its client port, in one phrase.
func MetricsSummary(m *model.MetricsFacts) string {
	role := "a follower"
	switch {
	case m.IsLeader:
		role = "the leader"
	case m.IsLearner:
		role = "a learner"
	}
	leader := "has a leader"
	if !m.HasLeader {
		leader = "has no leader"
	}
	return fmt.Sprintf("its metrics listener (port %d, no certificate needed) says member %s, %s, %s, applied %d of %d committed, version %s; "+
		"its cluster ID, member list, term and alarms stay unknown without a client certificate", m.Port, m.MemberID, role, leader, m.Applied, m.Committed, format.Dash(m.Version))
}
