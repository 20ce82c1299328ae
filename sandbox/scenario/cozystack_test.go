package scenario

import (
	"slices"
	"strings"
	"testing"
)

func TestCozystackOwns(t *testing.T) {
	s, err := Get("cozystack")
	if err != nil {
		t.Fatal(err)
	}
	for pod, want := range map[string]bool{
		"cozystack-x7k2q":       true,
		"cozystack-b4d9z":       true,
		"cozystack-0":           false,
		"cozystack-X7K2Q":       false,
		"cozystack-split-x7k2q": false,
		"cozystack-x7k2":        false,
		"other-x7k2q":           false,
	} {
		if got := s.Owns(pod); got != want {
			t.Errorf("Owns(%q) = %v, want %v", pod, got, want)
		}
	}
	split, _ := Get("cozystack-split")
	if !split.Owns("cozystack-split-x7k2q") || split.Shape != CozystackOperator || split.Shape.String() != "cozystack-operator" {
		t.Errorf("cozystack-split: %+v", split)
	}
	for _, n := range []string{"cozystack", "cozystack-split", "cozystack-cr-stale", "cozystack-member-stale"} {
		if slices.Contains(Demo, n) {
			t.Errorf("%s is in Demo", n)
		}
	}
}

func TestCozystackMemberPod(t *testing.T) {
	p := CozystackMemberPod("ns", "c", "c-x7k2q", "uid-1", "c-x7k2q=http://c-x7k2q.c.ns.svc:2380", "ns-c-uid", "new")
	if p.Spec.Hostname != "c-x7k2q" || p.Spec.Subdomain != "c" {
		t.Errorf("hostname %q subdomain %q", p.Spec.Hostname, p.Spec.Subdomain)
	}
	ctl := p.OwnerReferences[0]
	if ctl.Kind != "EtcdMember" || ctl.APIVersion != "etcd-operator.cozystack.io/v1alpha2" || ctl.UID != "uid-1" || !*ctl.Controller {
		t.Errorf("owner %+v", ctl)
	}
	cmd := p.Spec.Containers[0].Command
	for _, want := range []string{
		"--advertise-client-urls=https://c-x7k2q.c.ns.svc:2379",
		"--initial-advertise-peer-urls=http://c-x7k2q.c.ns.svc:2380",
		"--initial-cluster-state=new",
		"--client-cert-auth=true",
	} {
		if !slices.Contains(cmd, want) {
			t.Errorf("command %v lacks %s", cmd, want)
		}
	}
	for k, v := range p.Labels {
		if strings.Contains(k, "hactl.dev") || strings.Contains(v, "hactl") {
			t.Errorf("label %s=%s", k, v)
		}
	}
	if p.Labels[CozystackClusterLabel] != "c" || p.Labels[CozystackRoleLabel] != "voter" || p.Labels["app.kubernetes.io/component"] != "c-x7k2q" {
		t.Errorf("labels %v", p.Labels)
	}
}
