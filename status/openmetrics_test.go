package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/hactl-dev/hactl/model"
)

// TestOpenMetrics: the documents' verdicts, reasons and member facts as
// metrics that promlint (promtool check metrics) finds nothing wrong
// with, that the Prometheus text parser node_exporter's textfile
// collector uses reads, and where an unknown lag is absent, never 0.
func TestOpenMetrics(t *testing.T) {
	yes, no := true, false
	lag := int64(1200)
	expiry := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	docs := []*ClusterStatus{{
		Metadata: StatusMeta{Namespace: "db", Name: "etcd"}, Engine: "etcd", Shape: "static-existing", Replicas: 3, ReadyMembers: 2,
		Leader: "etcd-0", ObservedAt: time.Unix(1796560000, 500e6),
		LastSeed: &SeedStatus{Generation: "g-42", PublishedAt: time.Unix(1796500000, 0)},
		Verdict: VerdictStatus{ControlReady: true, Reasons: []ReasonStatus{
			{Code: "member_lagging", Impact: "failover", Member: "etcd-1", Detail: "1200 entries"},
			{Code: "pod_not_ready", Impact: "failover", Member: "etcd-2"},
			{Code: "pod_not_ready", Impact: "failover", Member: "etcd-2", Detail: "again, another detail"},
		}},
		Members: []MemberStatus{
			{Name: "etcd-0", Reachable: &yes, Lag: new(int64), ProbeSeconds: 0.004,
				ServingCerts: []model.CertFacts{{NotAfter: expiry, Port: 2379}, {NotAfter: expiry.Add(time.Hour), Port: 2379}}},
			{Name: "etcd-1", Reachable: &yes, Lag: &lag, ProbeSeconds: 0.005},
			{Name: "etcd-2", Reachable: &no, ProbeSeconds: 2},
		},
	}}
	var b bytes.Buffer
	if err := WriteOpenMetrics(&b, docs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`hactl_cluster_control_ready{cluster="etcd",namespace="db"} 1.0`,
		`hactl_cluster_failover_ready{cluster="etcd",namespace="db"} 0.0`,
		`hactl_cluster_details{cluster="etcd",engine="etcd",leader="etcd-0",namespace="db",shape="static-existing"} 1.0`,
		`hactl_reason{cluster="etcd",code="member_lagging",impact="failover",member="etcd-1",namespace="db"} 1.0`,
		`hactl_member_lag{cluster="etcd",member="etcd-1",namespace="db"} 1200.0`,
		`hactl_member_lag{cluster="etcd",member="etcd-0",namespace="db"} 0.0`,
		`hactl_member_reachable{cluster="etcd",member="etcd-2",namespace="db"} 0.0`,
		`hactl_member_serving_cert_expiry_timestamp_seconds{cluster="etcd",member="etcd-0",namespace="db",port="2379"} 1.798859045e+09`,
		`hactl_cluster_observed_timestamp_seconds{cluster="etcd",namespace="db"} 1.7965600005e+09`,
		`hactl_cluster_last_seed_timestamp_seconds{cluster="etcd",generation="g-42",namespace="db"} 1.7965e+09`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no line %s in\n%s", want, out)
		}
	}
	if strings.Contains(out, `hactl_member_lag{cluster="etcd",member="etcd-2"`) {
		t.Errorf("an unknown lag is printed:\n%s", out)
	}
	if strings.Count(out, "hactl_member_serving_cert_expiry_timestamp_seconds{") != 1 {
		t.Errorf("two certificates on one port make one series:\n%s", out)
	}
	if strings.Count(out, `code="pod_not_ready"`) != 1 {
		t.Errorf("one series per code and member, got:\n%s", out)
	}
	if !strings.HasSuffix(out, "# EOF\n") {
		t.Errorf("no # EOF at the end")
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses it: %v", err)
	}
	if len(mfs) != 12 {
		t.Errorf("%d metric families, want 12", len(mfs))
	}
	var fams []*dto.MetricFamily
	for _, mf := range mfs {
		fams = append(fams, mf)
	}
	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
}

// TestLastSeedIsTheNewestDoneSeed: the newest seed entry that finished
// done, whatever else the ledger holds (a later failed seed, a later
// replace, a seed in progress).
func TestLastSeedIsTheNewestDoneSeed(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 12, 6, 10, m, 0, 0, time.UTC) }
	cs := &ClusterStatus{}
	AttachActions(cs, []model.LedgerEntry{
		{ID: "s1", Action: model.ActionSeed, Generation: "g1", State: model.EntryDone, UpdatedAt: at(1)},
		{ID: "s2", Action: model.ActionSeed, Generation: "g2", State: model.EntryDone, UpdatedAt: at(5)},
		{ID: "s3", Action: model.ActionSeed, Generation: "g3", State: model.EntryFailed, UpdatedAt: at(9)},
		{ID: "s4", Action: model.ActionSeed, Generation: "g4", State: model.EntryInProgress, UpdatedAt: at(10)},
		{ID: "r1", Action: model.ActionReplace, Member: "x", State: model.EntryDone, UpdatedAt: at(11)},
	})
	if cs.LastSeed == nil || cs.LastSeed.Generation != "g2" || !cs.LastSeed.PublishedAt.Equal(at(5)) {
		t.Fatalf("last seed %+v, want g2 at %s", cs.LastSeed, at(5))
	}
	AttachActions(cs, nil)
	if cs.LastSeed != nil {
		t.Fatalf("a ledger without seeds gives %+v", cs.LastSeed)
	}
}
