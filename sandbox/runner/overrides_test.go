package runner

import (
	"reflect"
	"testing"
)

func TestSeedFlagsAndWithFlagsDirect(t *testing.T) {
	l := Launch{Path: "/bin/etcd", Argv: []string{"etcd", "--name=m-0", "--initial-advertise-peer-urls", "http://127.5.1.1:2380",
		"--initial-cluster=m-0=http://127.5.1.1:2380,m-1=http://127.5.1.2:2380", "--initial-cluster-state", "existing", "--data-dir=/d"}}
	flags, err := SeedFlags(l)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--initial-cluster=m-0=http://127.5.1.1:2380", "--initial-cluster-state=new"}
	if !reflect.DeepEqual(flags, want) {
		t.Fatalf("SeedFlags = %q", flags)
	}
	got := WithFlags(l, flags).Argv
	wantArgv := []string{"etcd", "--name=m-0", "--initial-advertise-peer-urls", "http://127.5.1.1:2380", "--data-dir=/d",
		"--initial-cluster=m-0=http://127.5.1.1:2380", "--initial-cluster-state=new"}
	if !reflect.DeepEqual(got, wantArgv) {
		t.Fatalf("WithFlags argv\n got %q\nwant %q", got, wantArgv)
	}
	if !reflect.DeepEqual(l.Argv[6], "existing") {
		t.Fatal("WithFlags modified its input")
	}
}

func TestWithFlagsWrapperUsesEnv(t *testing.T) {
	l := Launch{Path: "/bin/sh", Argv: []string{"/bin/sh", "-ec", "exec etcd"},
		Env: []string{"ETCD_NAME=m-1", "ETCD_INITIAL_ADVERTISE_PEER_URLS=http://a:2380", "ETCD_INITIAL_CLUSTER_STATE=new"}}
	flags, err := SeedFlags(l)
	if err != nil {
		t.Fatal(err)
	}
	got := WithFlags(l, flags)
	if !reflect.DeepEqual(got.Argv, l.Argv) {
		t.Fatalf("argv changed: %q", got.Argv)
	}
	want := []string{"ETCD_NAME=m-1", "ETCD_INITIAL_ADVERTISE_PEER_URLS=http://a:2380", "ETCD_INITIAL_CLUSTER=m-1=http://a:2380", "ETCD_INITIAL_CLUSTER_STATE=new"}
	if !reflect.DeepEqual(got.Env, want) {
		t.Fatalf("env %q", got.Env)
	}
}

func TestSeedFlagsNeedNameAndPeerURL(t *testing.T) {
	if _, err := SeedFlags(Launch{Path: "/bin/etcd", Argv: []string{"etcd", "--name=x"}}); err == nil {
		t.Fatal("no error without a peer URL")
	}
}
