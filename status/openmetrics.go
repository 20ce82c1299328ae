package status

import (
	"io"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// The metrics status -o openmetrics prints: one gauge family each, every
// series labelled with the cluster's namespace and name. They come from
// the printed documents (ClusterStatus), so they say what the table and
// -o json say.
var (
	clusterLabels = []string{"namespace", "cluster"}
	memberLabels  = []string{"namespace", "cluster", "member"}

	// Not "_info": OpenMetrics keeps that suffix for its info type.
	descInfo = prometheus.NewDesc("hactl_cluster_details",
		"An HA cluster hactl found: its engine, bootstrap shape and leader (empty when none is agreed).",
		append(clusterLabels, "engine", "shape", "leader"), nil)
	descControl = prometheus.NewDesc("hactl_cluster_control_ready",
		"1 when the cluster works now (control_ready), else 0.", clusterLabels, nil)
	descFailover = prometheus.NewDesc("hactl_cluster_failover_ready",
		"1 when losing any one member would be survivable (failover_ready), else 0.", clusterLabels, nil)
	descReplicas = prometheus.NewDesc("hactl_cluster_members",
		"The members the StatefulSet wants.", clusterLabels, nil)
	descReady = prometheus.NewDesc("hactl_cluster_ready_members",
		"The members whose pods are ready.", clusterLabels, nil)
	descObserved = prometheus.NewDesc("hactl_cluster_observed_timestamp_seconds",
		"When the cluster was observed (Unix time).", clusterLabels, nil)
	descReason = prometheus.NewDesc("hactl_reason",
		"1 for each reason code the verdict gives (docs/reason-codes.md); member is empty for cluster-wide ones.",
		append(clusterLabels, "code", "impact", "member"), nil)
	descReachable = prometheus.NewDesc("hactl_member_reachable",
		"1 when the member answered its probe, 0 when it did not (absent when it was not probed).", memberLabels, nil)
	descLag = prometheus.NewDesc("hactl_member_lag",
		"The member's lag behind the leader's frontier read in the same round, in the engine's unit: raft entries (etcd), bytes of WAL (patroni), the mapping's positions (http). Absent when unknown: never 0 for unknown.",
		memberLabels, nil)
	descProbe = prometheus.NewDesc("hactl_member_probe_duration_seconds",
		"How long the member's probe took.", memberLabels, nil)
	descSeed = prometheus.NewDesc("hactl_cluster_last_seed_timestamp_seconds",
		"When the newest seed generation hactl's ledger records as published was published (Unix time); absent when the ledger records none. Alert when time() minus it exceeds the recovery point objective.",
		append(clusterLabels, "generation"), nil)
	descCert = prometheus.NewDesc("hactl_member_serving_cert_expiry_timestamp_seconds",
		"When the certificate the member served on port expires (Unix time): the probed port's, and etcd's https peer port's (read with a handshake alone).",
		append(memberLabels, "port"), nil)
)

// metrics is a prometheus.Collector over printed documents: those docs
// returns when a registry gathers.
type metrics struct{ docs func() []*ClusterStatus }

// NewCollector returns a prometheus.Collector of the metrics
// WriteOpenMetrics prints, over the documents docs returns at each
// gather: the latest snapshot of a long-running observer (agent
// exporter), so a scrape costs no API call and no probe.
func NewCollector(docs func() []*ClusterStatus) prometheus.Collector { return metrics{docs: docs} }

func (metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInfo, descControl, descFailover, descReplicas, descReady, descObserved,
		descReason, descReachable, descLag, descProbe, descCert, descSeed} {
		ch <- d
	}
}

func (ms metrics) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		// A label that is no valid UTF-8 (a member's name is) loses
		// its series, not the output.
		if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...); err == nil {
			ch <- m
		}
	}
	for _, c := range ms.docs() {
		ns, name := c.Metadata.Namespace, c.Metadata.Name
		gauge(descInfo, 1, ns, name, c.Engine, c.Shape, c.Leader)
		gauge(descControl, bool01(c.Verdict.ControlReady), ns, name)
		gauge(descFailover, bool01(c.Verdict.FailoverReady), ns, name)
		gauge(descReplicas, float64(c.Replicas), ns, name)
		gauge(descReady, float64(c.ReadyMembers), ns, name)
		if !c.ObservedAt.IsZero() {
			gauge(descObserved, float64(c.ObservedAt.UnixMilli())/1000, ns, name)
		}
		if ls := c.LastSeed; ls != nil && !ls.PublishedAt.IsZero() {
			gauge(descSeed, float64(ls.PublishedAt.Unix()), ns, name, ls.Generation)
		}
		seen := map[[3]string]bool{}
		for _, r := range c.Verdict.Reasons {
			// One series per code and member: the details may differ.
			k := [3]string{r.Code, r.Impact, r.Member}
			if !seen[k] {
				seen[k] = true
				gauge(descReason, 1, ns, name, r.Code, r.Impact, r.Member)
			}
		}
		for _, m := range c.Members {
			if m.Reachable != nil {
				gauge(descReachable, bool01(*m.Reachable), ns, name, m.Name)
				gauge(descProbe, m.ProbeSeconds, ns, name, m.Name)
			}
			if m.Lag != nil {
				gauge(descLag, float64(*m.Lag), ns, name, m.Name)
			}
			ports := map[int]bool{}
			for _, sc := range m.ServingCerts {
				// One series per port: the first certificate read on it.
				if !sc.NotAfter.IsZero() && !ports[sc.Port] {
					ports[sc.Port] = true
					gauge(descCert, float64(sc.NotAfter.Unix()), ns, name, m.Name, strconv.Itoa(sc.Port))
				}
			}
		}
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteOpenMetrics writes docs' verdicts, reasons and member facts in the
// OpenMetrics text format (for node_exporter's textfile collector, or a
// scrape), ending with "# EOF".
func WriteOpenMetrics(w io.Writer, docs []*ClusterStatus) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(func() []*ClusterStatus { return docs })); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	_, err = expfmt.FinalizeOpenMetrics(w)
	return err
}
