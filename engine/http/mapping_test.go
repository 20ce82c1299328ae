package http

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/model"
)

// example reads one of the mappings docs/examples ships.
func example(t *testing.T, name string) map[string]string { return fixtures.HTTPMapping(t, name) }

func TestExampleMappingsParse(t *testing.T) {
	for _, name := range []string{"patroni", "etcd", "tidaldb"} {
		m, err := Parse(example(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Port <= 0 || !m.Mapped(KeyApplied) || !m.Mapped(KeyFrontier) {
			t.Errorf("%s: %+v lacks a port, applied or frontier", name, m)
		}
	}
}

func TestParseNamesEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		data map[string]string
		want []string
	}{
		{nil, []string{"no mapping", "hactl.dev/engine-config"}},
		{map[string]string{"role": "{.role}"}, []string{"port is required"}},
		{map[string]string{"port": "http", "role": "{.role}"}, []string{`port "http" is not a port number`}},
		{map[string]string{"port": "80"}, []string{"neither role nor leader"}},
		{map[string]string{"port": "80", "role": "{.items[}", "applied": "{.a}"}, []string{"role:", "not a JSONPath expression"}},
		{map[string]string{"port": "80", "role": "leader"}, []string{`role: "leader" is not one JSONPath expression in braces`}},
		{map[string]string{"port": "80", "role": "{.role}", "memberID": "x{.id}"}, []string{`memberID: "x{.id}" is not one JSONPath expression`}},
		{map[string]string{"port": "80", "role": "{.role}", "applied": "{.a}{.b}"}, []string{`applied: "{.a}{.b}" is not one JSONPath expression`}},
		{map[string]string{"port": "80", "role": "{.role}", "rol": "x", "method": "DELETE", "quorum": "most", "lagThreshold": "-1", "path": "x", "replace": "rebuild"},
			[]string{`unknown key "rol"`, `method "DELETE"`, `quorum "most"`, `lagThreshold "-1"`, `path "x"`, `replace "rebuild"`}},
	} {
		_, err := Parse(tc.data)
		if err == nil {
			t.Errorf("%v: parsed", tc.data)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", tc.data, err, w)
			}
		}
	}
}

// Patroni 3.0.2's GET /patroni as captured on a leader and a replica
// (design notes, section 4), and one paused.
const (
	patroniLeader = `{"state":"running","postmaster_start_time":"2026-12-01 18:46:53.401501+00:00","role":"master",
 "server_version":150018,"xlog":{"location":67108864},"timeline":1,
 "replication":[{"usename":"replicator","application_name":"pg1","client_addr":"127.0.0.1","state":"streaming","sync_state":"async","sync_priority":0}],
 "dcs_last_seen":1796150821,"database_system_identifier":"7714408992045998259","patroni":{"version":"3.0.2","scope":"pgr"}}`
	patroniReplica = `{"state":"running","postmaster_start_time":"2026-12-01 18:46:53.401501+00:00","role":"replica","server_version":150018,
 "xlog":{"received_location":67108864,"replayed_location":67100000,"replayed_timestamp":null,"paused":false},
 "timeline":1,"dcs_last_seen":1796150817,"database_system_identifier":"7714408992045998259","patroni":{"version":"3.0.2","scope":"pgr"},"pause":true}`
	patroniNoXlog = `{"state":"unknown","role":"replica","database_system_identifier":"7714408992045998259"}`
)

func TestFactsFromPatroniDocuments(t *testing.T) {
	m, err := Parse(example(t, "patroni"))
	if err != nil {
		t.Fatal(err)
	}
	facts := func(doc, member string) (f struct {
		id, leader, cluster, role string
		term, applied, frontier   uint64
		hasApplied, hasFrontier   bool
		ready, paused             bool
	}) {
		d, err := Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Facts(d, member)
		if err != nil {
			t.Fatalf("%s: %v", member, err)
		}
		f.id, f.leader, f.cluster, f.role, f.term = e.MemberID, e.LeaderID, e.ClusterID, e.Document.Role, e.RaftTerm
		f.applied, f.frontier = e.RaftApplied, e.RaftIndex
		f.hasApplied, f.hasFrontier = e.Document.Applied != nil, e.Document.Frontier != nil
		f.ready, f.paused = e.Document.Ready != nil && *e.Document.Ready, e.Document.Paused
		return f
	}
	l := facts(patroniLeader, "pg-0")
	if l.id != "pg-0" || l.leader != "pg-0" || l.cluster != "7714408992045998259" || l.term != 1 || l.applied != 67108864 || l.frontier != 67108864 || !l.ready || l.paused {
		t.Errorf("leader facts %+v", l)
	}
	r := facts(patroniReplica, "pg-1")
	if r.id != "pg-1" || r.leader != "" || r.applied != 67100000 || r.hasFrontier || !r.ready || !r.paused {
		t.Errorf("replica facts %+v", r)
	}
	u := facts(patroniNoXlog, "pg-2")
	if u.hasApplied || u.ready {
		t.Errorf("a document without xlog must have no applied position and not be ready: %+v", u)
	}
}

func TestFactsRefuseAnObjectWhereAValueBelongs(t *testing.T) {
	m, err := Parse(map[string]string{"port": "80", "role": "{.role}", "applied": "{.xlog}"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := Decode([]byte(patroniReplica))
	if _, err := m.Facts(d, "pg-1"); err == nil || !strings.Contains(err.Error(), "applied") {
		t.Errorf("an object read as a position: err %v", err)
	}
}

// TestSelfWrittenKeys: the keys the members rewrite on their own pods
// are read as written (case kept), a bad key is named, and the cluster's
// facts carry them through Keep; the shipped Patroni mapping names
// Patroni's role label and status annotation.
func TestSelfWrittenKeys(t *testing.T) {
	base := map[string]string{"port": "80", "role": "{.role}"}
	with := func(kv ...string) map[string]string {
		d := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			d[kv[i]] = kv[i+1]
		}
		return d
	}
	m, err := Parse(with(KeySelfWrittenLabels, " Role , ", KeySelfWrittenAnnotations, "status,example.com/last-seen"))
	if err != nil {
		t.Fatal(err)
	}
	if m.SelfWritten == nil || !slices.Equal(m.SelfWritten.Labels, []string{"Role"}) || !slices.Equal(m.SelfWritten.Annotations, []string{"status", "example.com/last-seen"}) {
		t.Errorf("self-written %+v", m.SelfWritten)
	}
	if m, err := Parse(base); err != nil || m.SelfWritten != nil {
		t.Errorf("no keys named: %+v, %v", m, err)
	}
	if _, err := Parse(with(KeySelfWrittenAnnotations, "status,bad key")); err == nil || !strings.Contains(err.Error(), `selfWrittenAnnotations: "bad key" is not a label or annotation key`) {
		t.Errorf("a bad key: %v", err)
	}

	for _, k := range []string{"hactl.dev/lock", "controller-revision-hash", "statefulset.kubernetes.io/pod-name"} {
		if _, err := Parse(with(KeySelfWrittenLabels, k)); err == nil || !strings.Contains(err.Error(), "never a member's own") {
			t.Errorf("%s named self-written: %v", k, err)
		}
	}
	// A label the template sets stays in the fence.
	c := &model.ClusterFacts{EngineConfig: with(KeySelfWrittenLabels, "app,role", KeySelfWrittenAnnotations, "status")}
	Engine{}.Keep(model.PodTemplate{Labels: map[string]string{"app": "pg"}}, nil, c)
	if c.SelfWritten == nil || !slices.Equal(c.SelfWritten.Labels, []string{"role"}) {
		t.Errorf("with the template's label app named: self-written %+v, want role alone", c.SelfWritten)
	}
	c = &model.ClusterFacts{EngineConfig: example(t, "patroni")}
	Engine{}.Keep(model.PodTemplate{}, nil, c)
	if c.SelfWritten == nil || !slices.Equal(c.SelfWritten.Labels, []string{"role"}) || !slices.Equal(c.SelfWritten.Annotations, []string{"status"}) {
		t.Errorf("the shipped Patroni mapping: self-written %+v, want the role label and the status annotation", c.SelfWritten)
	}
	c = &model.ClusterFacts{EngineConfig: map[string]string{"port": "x"}}
	Engine{}.Keep(model.PodTemplate{}, nil, c)
	if c.SelfWritten != nil {
		t.Errorf("a mapping that does not parse: self-written %+v", c.SelfWritten)
	}
}
