package model

import (
	"errors"
	"strings"
	"testing"
)

func TestTemplateShape(t *testing.T) {
	base := TemplateFacts{InitialClusterState: "existing", InitialClusterStateFrom: "arg", ClientPort: 2379}
	cases := []struct {
		name   string
		mutate func(*TemplateFacts)
		want   Shape
	}{
		{"static existing", func(*TemplateFacts) {}, ShapeStaticExisting},
		{"static new (upstream guide, kamaji)", func(t *TemplateFacts) { t.InitialClusterState = "new" }, ShapeStaticNew},
		{"static pods (kubeadm): the kubelet's, whatever the flags say", func(t *TemplateFacts) { t.OperatorOwner = OwnerKubelet; t.InitialClusterState = "new" }, ShapeStaticPods},
		{"self-registering wins over literal new", func(t *TemplateFacts) {
			t.InitialClusterState = "new"
			t.SelfRegistering = true
			t.ShellWrapper = true
		}, ShapeSelfRegistering},
		{"operator owner", func(t *TemplateFacts) { t.OperatorOwner = "EtcdCluster/main" }, ShapeOperatorOwned},
		{"backup sidecar", func(t *TemplateFacts) { t.BackupSidecar = true }, ShapeOperatorOwned},
		{"unknown shell wrapper", func(t *TemplateFacts) { t.ShellWrapper = true }, ShapeUnknown},
		{"preStop calls etcdctl", func(t *TemplateFacts) { t.PreStopCallsEngineCLI = true }, ShapeUnknown},
		{"no state flag", func(t *TemplateFacts) { t.InitialClusterState = "" }, ShapeUnknown},
	}
	seen := map[Shape]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tf := base
			c.mutate(&tf)
			if got := tf.Shape(); got != c.want {
				t.Fatalf("Shape = %s, want %s", got, c.want)
			}
		})
		seen[c.want] = true
	}
	for _, s := range AllShapes {
		if !seen[s] {
			t.Errorf("no row produces shape %s", s)
		}
	}
}

func TestParseInitialCluster(t *testing.T) {
	cases := []struct {
		in      string
		want    []InitialClusterEntry
		wantErr bool
	}{
		{"", nil, false},
		{"a=http://a:2380", []InitialClusterEntry{{Name: "a", PeerURL: "http://a:2380"}}, false},
		{"a=http://a:2380, b=https://b.svc:2380", []InitialClusterEntry{{Name: "a", PeerURL: "http://a:2380"}, {Name: "b", PeerURL: "https://b.svc:2380"}}, false},
		{"a=http://a:2380,a=http://a2:2380", []InitialClusterEntry{{Name: "a", PeerURL: "http://a:2380"}, {Name: "a", PeerURL: "http://a2:2380"}}, false},
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
