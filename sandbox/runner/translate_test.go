package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// fakeBin makes a directory holding executables etcd and etcdctl.
func fakeBin(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, n := range []string{"etcd", "etcdctl"} {
		if err := os.WriteFile(filepath.Join(d, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// podFrom makes pod ordinal i of a rendered cluster.
func podFrom(t *testing.T, shape scenario.Shape, i int) (*corev1.Pod, []Governor) {
	t.Helper()
	o, err := scenario.Render(shape, scenario.Params{Name: "c", Namespace: "ns", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	sts := o.StatefulSet
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i), Namespace: "ns", UID: "uid-1", Labels: sts.Spec.Template.Labels},
		Spec:       *sts.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = "node-1"
	return pod, []Governor{{Namespace: "ns", Name: "c", Service: sts.Spec.ServiceName}}
}

func testEnv(t *testing.T, pod *corev1.Pod, govs []Governor, bin string) PodEnv {
	volume := pod.Spec.Containers[0].VolumeMounts[0].Name
	return PodEnv{
		Pod:         pod,
		Address:     "127.5.1.1",
		PeerAddress: "127.5.2.1",
		PodIP:       "10.244.5.1",
		HostIP:      "127.0.0.1",
		Volumes:     map[string]string{volume: "/host/vol"},
		Resolve: func(h string) (string, bool) {
			ns, p, ok := ResolvePodDNS(h, pod.Namespace, govs)
			if !ok || ns != "ns" {
				return "", false
			}
			var n int
			fmt.Sscanf(p, "c-%d", &n)
			return fmt.Sprintf("127.5.1.%d", n+1), true
		},
		PathEnv:  bin + ":/usr/bin:/bin",
		Home:     "/host/home",
		PodProxy: "socks5://127.5.0.1:1080",
	}
}

func TestTranslateStaticExisting(t *testing.T) {
	bin := fakeBin(t)
	pod, govs := podFrom(t, scenario.StaticExisting, 0)
	l, err := Translate(testEnv(t, pod, govs, bin), &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/usr/local/bin/etcd",
		"--name=c-0",
		"--data-dir=/host/vol/default.etcd",
		"--listen-client-urls=http://127.5.1.1:2379",
		"--advertise-client-urls=http://127.5.1.1:2379",
		"--listen-peer-urls=http://127.5.2.1:2380",
		"--initial-advertise-peer-urls=http://127.5.1.1:2380",
		"--initial-cluster=c-0=http://127.5.1.1:2380,c-1=http://127.5.1.2:2380,c-2=http://127.5.1.3:2380",
		"--initial-cluster-state=existing",
		"--initial-cluster-token=c",
		"--quota-backend-bytes=67108864",
	}
	if !reflect.DeepEqual(l.Argv, want) {
		t.Fatalf("argv:\n got %q\nwant %q", l.Argv, want)
	}
	if l.Path != filepath.Join(bin, "etcd") {
		t.Fatalf("path %q", l.Path)
	}
	if !reflect.DeepEqual(l.PeerPorts, []int{2380}) {
		t.Fatalf("peer ports %v", l.PeerPorts)
	}
	if l.Readiness == nil || l.Readiness.Kind != ProbeHTTP || l.Readiness.URL != "http://127.5.1.1:2379/health" {
		t.Fatalf("readiness %+v", l.Readiness)
	}
	if l.Readiness.Period.Seconds() != 1 || l.Readiness.FailureThreshold != 3 {
		t.Fatalf("probe timing %+v", l.Readiness)
	}
	env := strings.Join(l.Env, "\n")
	for _, kv := range []string{"POD_NAME=c-0", "HOSTNAME=c-0", "HOME=/host/home", "PATH=" + bin + ":/usr/bin:/bin"} {
		if !strings.Contains(env, kv) {
			t.Errorf("env lacks %s:\n%s", kv, env)
		}
	}
	if strings.Contains(env, "ALL_PROXY") {
		t.Errorf("a member that is not hactl's agent got the pod network proxy:\n%s", env)
	}
	if l.Dir != "/host/home" {
		t.Errorf("dir %q", l.Dir)
	}
}

func TestTranslateStaticNewShortNames(t *testing.T) {
	bin := fakeBin(t)
	pod, govs := podFrom(t, scenario.StaticNew, 2)
	pe := testEnv(t, pod, govs, bin)
	pe.Address, pe.PeerAddress = "127.5.1.3", "127.5.2.3"
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Argv, " ")
	for _, s := range []string{
		"--advertise-client-urls=http://127.5.1.3:2379",
		"--listen-peer-urls=http://127.5.2.3:2380",
		"--initial-cluster=c-0=http://127.5.1.1:2380,c-1=http://127.5.1.2:2380,c-2=http://127.5.1.3:2380",
		"--initial-cluster-state=new",
		"--data-dir=/host/vol ",
	} {
		if !strings.Contains(argv+" ", s) {
			t.Errorf("argv lacks %q: %s", s, argv)
		}
	}
	if l.Argv[0] != "etcd" || l.Path != filepath.Join(bin, "etcd") {
		t.Errorf("argv[0] %q path %q", l.Argv[0], l.Path)
	}
}

func TestTranslateSelfRegistering(t *testing.T) {
	bin := fakeBin(t)
	pod, govs := podFrom(t, scenario.SelfRegistering, 1)
	pe := testEnv(t, pod, govs, bin)
	pe.Address, pe.PeerAddress = "127.5.1.2", "127.5.2.2"
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != "/bin/sh" || l.Argv[1] != "-ec" || !strings.Contains(l.Argv[2], "member add") {
		t.Fatalf("argv %q", l.Argv)
	}
	env := map[string]string{}
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, v := range map[string]string{
		"ETCD_ON_K8S":                      "yes",
		"ETCD_NAME":                        "c-1",
		"ETCD_DATA_DIR":                    "/host/vol/data",
		"ETCD_LISTEN_CLIENT_URLS":          "http://127.5.1.2:2379",
		"ETCD_LISTEN_PEER_URLS":            "http://127.5.2.2:2380",
		"ETCD_INITIAL_ADVERTISE_PEER_URLS": "http://127.5.1.2:2380",
		"ETCD_ADVERTISE_CLIENT_URLS":       "http://127.5.1.2:2379",
		"ETCD_INITIAL_CLUSTER":             "c-0=http://127.5.1.1:2380,c-1=http://127.5.1.2:2380,c-2=http://127.5.1.3:2380",
		"ETCD_INITIAL_CLUSTER_STATE":       "new",
		"CLUSTER_CLIENT_URLS":              "http://127.5.1.1:2379,http://127.5.1.2:2379,http://127.5.1.3:2379",
	} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if !reflect.DeepEqual(l.PeerPorts, []int{2380}) {
		t.Fatalf("peer ports %v", l.PeerPorts)
	}
	p := l.Readiness
	if p == nil || p.Kind != ProbeExec || p.Exec.Path != filepath.Join(bin, "etcdctl") ||
		strings.Join(p.Exec.Argv, " ") != "etcdctl endpoint health --endpoints=http://127.5.1.2:2379" {
		t.Fatalf("readiness %+v", p)
	}
}

func TestSubstitution(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0", Namespace: "ns"}}
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.1", PeerAddress: "127.5.2.1", PodIP: "10.244.5.1",
		Resolve: func(h string) (string, bool) {
			if h == "c-1.c-headless" {
				return "127.5.1.2", true
			}
			return "", false
		},
	}
	s := &substituter{pe: pe, ports: map[int]bool{}, mounts: []mount{{"/var/lib/etcd", "/h/v"}, {"/data", "/h/d"}}}
	for in, want := range map[string]string{
		"http://0.0.0.0:2379,http://127.0.0.1:2379":            "http://127.5.1.1:2379",
		"--listen-client-urls=http://localhost:2379":           "--listen-client-urls=http://127.5.1.1:2379",
		"http://10.244.5.1:2379":                               "http://127.5.1.1:2379",
		"http://[::]:2379":                                     "http://127.5.1.1:2379",
		"http://c-1.c-headless:2380":                           "http://127.5.1.2:2380",
		"http://example.com:80":                                "http://example.com:80",
		"127.0.0.10":                                           "127.0.0.10",
		"mylocalhost.example":                                  "mylocalhost.example",
		"/var/lib/etcd/member":                                 "/h/v/member",
		"/var/lib/etcdx":                                       "/var/lib/etcdx",
		"/srv/var/lib/etcd":                                    "/srv/var/lib/etcd",
		"--data-dir /data":                                     "--data-dir /h/d",
		"exec etcd --listen-peer-urls=http://0.0.0.0:2380 --x": "exec etcd --listen-peer-urls=http://127.5.2.1:2380 --x",
		"a,a,b": "a,b",
		// An object store's URL is kept as written: its endpoint is the
		// sandbox's S3 on this host's loopback, not the pod.
		"--store=s3://seeds/c?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1":         "--store=s3://seeds/c?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1",
		"s3://seeds/var/lib/etcd?endpoint=http://localhost:9000":                                           "s3://seeds/var/lib/etcd?endpoint=http://localhost:9000",
		"restore --store 's3://b?endpoint=http://127.0.0.1:1' --data-dir /data --peer http://0.0.0.0:2380": "restore --store 's3://b?endpoint=http://127.0.0.1:1' --data-dir /h/d --peer http://127.5.1.1:2380",
		"gs://b/p,azblob://c/p": "gs://b/p,azblob://c/p",
	} {
		if got := s.apply(in, false); got != want {
			t.Errorf("apply(%q) = %q, want %q", in, got, want)
		}
	}
	if got := s.apply("http://0.0.0.0:2380", true); got != "http://127.5.2.1:2380" {
		t.Errorf("peer apply = %q", got)
	}
	if !reflect.DeepEqual(s.peerPorts(), []int{2380}) {
		t.Errorf("peer ports %v", s.peerPorts())
	}
}

func TestResolvePodDNS(t *testing.T) {
	govs := []Governor{{Namespace: "ns", Name: "etcd", Service: "etcd-headless"}, {Namespace: "other", Name: "db", Service: "db"}}
	for host, want := range map[string]string{
		"etcd-0.etcd-headless":                        "ns/etcd-0",
		"etcd-12.etcd-headless.ns":                    "ns/etcd-12",
		"etcd-1.etcd-headless.ns.svc":                 "ns/etcd-1",
		"etcd-1.etcd-headless.ns.svc.cluster.local":   "ns/etcd-1",
		"etcd-1.etcd-headless.ns.svc.cluster.local.":  "ns/etcd-1",
		"db-0.db.other.svc.cluster.local":             "other/db-0",
		"db-0.db":                                     "",
		"etcd-x.etcd-headless":                        "",
		"etcd-client.ns.svc.cluster.local":            "",
		"etcd-0.etcd-headless.ns.svc.cluster.example": "",
		"other-0.etcd-headless":                       "",
		"localhost":                                   "",
	} {
		ns, pod, ok := ResolvePodDNS(host, "ns", govs)
		got := ""
		if ok {
			got = ns + "/" + pod
		}
		if got != want {
			t.Errorf("ResolvePodDNS(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestTranslateEnvSources(t *testing.T) {
	bin := fakeBin(t)
	optional := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-0", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{NodeName: "node-2", Containers: []corev1.Container{{
			Name: "main", Image: "gcr.io/etcd-development/etcd:v3.6.16",
			EnvFrom: []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			Env: []corev1.EnvVar{
				{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
				{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k", Optional: &optional}}},
				{Name: "URL", Value: "http://$(IP):2379/$(CM_A)/$(OPT)"},
			},
			Args: []string{"--x=$(NODE)"},
		}}},
	}
	pe := PodEnv{Pod: pod, Address: "127.5.1.9", PodIP: "10.244.5.9", HostIP: "127.0.0.1", PathEnv: bin, Home: "/h",
		Objects: fakeObjects{cm: map[string]map[string]string{"cm": {"A": "a"}}, secret: map[string]map[string]string{"s": {"k": "v"}}}}
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/usr/local/bin/etcd", "--x=node-2"}; !reflect.DeepEqual(l.Argv, want) {
		t.Fatalf("argv %q (image entrypoint)", l.Argv)
	}
	env := strings.Join(l.Env, "\n") + "\n"
	for _, kv := range []string{"CM_A=a\n", "IP=127.5.1.9\n", "NODE=node-2\n", "APP=x\n", "PASS=v\n", "URL=http://127.5.1.9:2379/a/$(OPT)\n"} {
		if !strings.Contains(env, kv) {
			t.Errorf("env lacks %q:\n%s", kv, env)
		}
	}
	if strings.Contains(env, "OPT=") {
		t.Errorf("missing optional secret set OPT")
	}

	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "BAD",
		ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k"}}})
	if _, err := Translate(pe, &pod.Spec.Containers[0]); err == nil {
		t.Fatal("a missing ConfigMap did not fail the container")
	}
}

func TestTranslateRefusesUnknownImageWithoutCommand(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "bitnami/etcd:3.6"}}}}
	if _, err := Translate(PodEnv{Pod: pod}, &pod.Spec.Containers[0]); err == nil {
		t.Fatal("no error for an image without known entrypoint")
	}
}

type fakeObjects struct{ cm, secret map[string]map[string]string }

func (f fakeObjects) ConfigMap(n string) (map[string]string, bool, error) {
	d, ok := f.cm[n]
	return d, ok, nil
}
func (f fakeObjects) Secret(n string) (map[string]string, bool, error) {
	d, ok := f.secret[n]
	return d, ok, nil
}

func TestSubstituteOverrideFlags(t *testing.T) {
	bin := fakeBin(t)
	pod, govs := podFrom(t, scenario.StaticExisting, 1)
	pe := testEnv(t, pod, govs, bin)
	pe.Address, pe.PeerAddress = "127.5.1.2", "127.5.2.2"
	got, err := Substitute(pe, &pod.Spec.Containers[0], []string{
		"--initial-cluster=c-1=http://c-1.c-headless.ns.svc.cluster.local:2380",
		"--listen-peer-urls=http://0.0.0.0:2380",
		"--data-dir=/var/run/etcd/other",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--initial-cluster=c-1=http://127.5.1.2:2380", "--listen-peer-urls=http://127.5.2.2:2380", "--data-dir=/host/vol/other"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// restorePod is a pod shaped like the one hactl's restore action creates
// for member ordinal 1 of StatefulSet c (see docs/sandbox.md).
func restorePod(store string) *corev1.Pod {
	dns := func(i int) string { return fmt.Sprintf("http://c-%d.c-headless.ns.svc.cluster.local:2380", i) }
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hactl-restore-c-1", Namespace: "ns", UID: "u-r",
			Labels: map[string]string{EngineLabel: "etcd", "hactl.dev/restore-of": "c", "hactl.dev/member": "c-1"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeName:      "node-2",
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-c-1"}}}},
			Containers: []corev1.Container{{
				Name: "restore", Image: "ghcr.io/hactl-dev/hactl:v0.1.0",
				Command: []string{AgentCommand, "agent", "restore"},
				Args: []string{
					"--store=" + store, "--generation=g1", "--data-dir=/var/run/etcd/default.etcd", "--name=c-1",
					"--initial-cluster=c-0=" + dns(0) + ",c-1=" + dns(1) + ",c-2=" + dns(2),
					"--initial-advertise-peer-urls=" + dns(1), "--initial-cluster-token=c", "--replace", "-o", "json",
				},
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "store-creds"}}}},
				Env:                      []corev1.EnvVar{{Name: "AWS_REGION", Value: "us-east-1"}},
				VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: "/var/run/etcd"}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// Store credentials that look like addresses and mount paths.
const (
	gcsKeyJSON      = `{"type": "service_account", "client_email": "seeds@p.iam.gserviceaccount.com", "token_uri": "http://127.0.0.1:39998/token", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIB/var/run/etcd\n-----END PRIVATE KEY-----\n"}`
	azureConnString = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5/var/run/etcd==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
)

func TestTranslateRestorePod(t *testing.T) {
	bin := fakeBin(t)
	agentDir := t.TempDir()
	agent := filepath.Join(agentDir, AgentCommand)
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const store = "s3://hactl-seeds/c?endpoint=http://127.0.0.1:39999&use_path_style=true&region=us-east-1"
	pod := restorePod(store)
	govs := []Governor{{Namespace: "ns", Name: "c", Service: "c-headless"}}
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.7", PodIP: "10.244.5.7", HostIP: "127.0.0.1",
		Volumes: map[string]string{"data": "/host/vol"},
		Resolve: func(h string) (string, bool) {
			_, p, ok := ResolvePodDNS(h, pod.Namespace, govs)
			if !ok {
				return "", false
			}
			var n int
			fmt.Sscanf(p, "c-%d", &n)
			return fmt.Sprintf("127.5.1.%d", n+1), true
		},
		Objects: fakeObjects{secret: map[string]map[string]string{"store-creds": {
			"AWS_ACCESS_KEY_ID": "hactl0123", "AWS_SECRET_ACCESS_KEY": "s3cr3t/localhost.example+0.0.0.0",
			"GOOGLE_APPLICATION_CREDENTIALS_JSON": gcsKeyJSON,
			"AZURE_STORAGE_CONNECTION_STRING":     azureConnString,
		}}},
		PathEnv:  bin + ":" + agentDir + ":/usr/bin:/bin",
		Home:     "/host/home",
		PodProxy: "socks5://127.5.0.1:1080",
	}
	l, err := Translate(pe, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != agent {
		t.Errorf("path %q, want the agent %q", l.Path, agent)
	}
	want := []string{
		AgentCommand, "agent", "restore",
		"--store=" + store, "--generation=g1", "--data-dir=/host/vol/default.etcd", "--name=c-1",
		"--initial-cluster=c-0=http://127.5.1.1:2380,c-1=http://127.5.1.2:2380,c-2=http://127.5.1.3:2380",
		"--initial-advertise-peer-urls=http://127.5.1.2:2380", "--initial-cluster-token=c", "--replace", "-o", "json",
	}
	if !reflect.DeepEqual(l.Argv, want) {
		t.Fatalf("argv:\n got %q\nwant %q", l.Argv, want)
	}
	env := strings.Join(l.Env, "\n") + "\n"
	for _, kv := range []string{
		"AWS_ACCESS_KEY_ID=hactl0123\n",
		// Credentials pass byte for byte, whatever they look like.
		"AWS_SECRET_ACCESS_KEY=s3cr3t/localhost.example+0.0.0.0\n",
		"AWS_REGION=us-east-1\n",
		// So do gs:// and azblob:// credentials, whose 127.0.0.1 is the
		// host's emulator, not the pod's address.
		"GOOGLE_APPLICATION_CREDENTIALS_JSON=" + gcsKeyJSON + "\n",
		"AZURE_STORAGE_CONNECTION_STRING=" + azureConnString + "\n",
		// hactl's agent reaches pod IPs through the runner's pod network.
		"ALL_PROXY=socks5://127.5.0.1:1080\n",
	} {
		if !strings.Contains(env, kv) {
			t.Errorf("env lacks %q:\n%s", kv, env)
		}
	}
	if len(l.PeerPorts) != 0 || l.Readiness != nil {
		t.Errorf("peer ports %v, readiness %+v", l.PeerPorts, l.Readiness)
	}
}
