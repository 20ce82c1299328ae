package classify

import (
	"errors"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/model"
)

func TestParseInitialCluster(t *testing.T) {
	cases := []struct {
		in      string
		want    []model.InitialClusterEntry
		wantErr bool
	}{
		{"", nil, false},
		{"a=http://a:2380", []model.InitialClusterEntry{{Name: "a", PeerURL: "http://a:2380"}}, false},
		{"a=http://a:2380, b=https://b.svc:2380", []model.InitialClusterEntry{{Name: "a", PeerURL: "http://a:2380"}, {Name: "b", PeerURL: "https://b.svc:2380"}}, false},
		{"a=http://a:2380,a=http://a2:2380", []model.InitialClusterEntry{{Name: "a", PeerURL: "http://a:2380"}, {Name: "a", PeerURL: "http://a2:2380"}}, false},
		{"a", nil, true},
		{"=http://a:2380", nil, true},
		{"a=", nil, true},
		{"a=a:2380", nil, true},
		{"a=http://a:2380,", nil, true},
		{"a=http://[::1", nil, true},
	}
	for _, c := range cases {
		got, err := ParseInitialCluster(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: err = %v, want error %v", c.in, err, c.wantErr)
			continue
		}
		if err != nil && !errors.Is(err, ErrInitialCluster) {
			t.Errorf("%q: error %v is not ErrInitialCluster", c.in, err)
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: got %v, want %v", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %v, want %v", c.in, got, c.want)
			}
		}
	}
}

func FuzzParseInitialCluster(f *testing.F) {
	for _, s := range []string{"a=http://a:2380", "a=http://a:2380,b=http://b:2380", "x", "a==b", ",,", "a=http://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseInitialCluster(s)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Name == "" || e.PeerURL == "" || strings.Contains(e.Name, ",") {
				t.Fatalf("%q parsed into bad entry %+v", s, e)
			}
		}
	})
}

func TestDescribeShowsFencesQuorumAndOverrides(t *testing.T) {
	d := judgedClassify(healthy(), replace1, now)
	text := strings.Join(Describe(d), "\n")
	for _, want := range []string{
		"replace etcd-1 in db/etcd", "shape static-existing", "flow learner",
		"quorum: 3 voters, quorum 2", "without etcd-1: 2 healthy >= 2: ok",
		"etcd member " + memberIDs[1], "cluster " + clusterID,
		"Pod db/etcd-1 uid=pod-uid-1 resourceVersion=101",
		"PersistentVolumeClaim db/data-etcd-1 uid=pvc-uid-1 resourceVersion=201",
		"1. [removing] remove member", "[catching-up] promote the learner",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("description lacks %q:\n%s", want, text)
		}
	}
	lead := judgedClassify(healthy(), model.Intent{Action: model.ActionReplace, Member: "etcd-0"}, now)
	text = strings.Join(Describe(lead), "\n")
	if !strings.Contains(text, "refused target_is_leader") || !strings.Contains(text, "(use --move-leader to override)") {
		t.Errorf("refusal does not name its override:\n%s", text)
	}
	o := healthy()
	down(&o, 2)
	text = strings.Join(Describe(judgedClassify(o, replace1, now)), "\n")
	if !strings.Contains(text, "without etcd-1: 1 healthy < 2: quorum would break") || !strings.Contains(text, "refused quorum_would_break") {
		t.Errorf("quorum refusal not explained:\n%s", text)
	}
	if !strings.Contains(text, "status member_unreachable etcd-2:") {
		t.Errorf("a refusal does not list the verdict's reasons:\n%s", text)
	}
	o = healthy()
	down(&o, 2)
	text = strings.Join(Describe(judgedClassify(o, intentFor(model.ActionReplace, "etcd-2"), now)), "\n")
	if strings.Contains(text, "status ") {
		t.Errorf("a plan that proceeds lists verdict reasons:\n%s", text)
	}
}
