package runner

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// pgoPod is the pod of instance 0 of the cluster PGO lays out.
func pgoPod(t *testing.T) *corev1.Pod {
	t.Helper()
	ca, err := scenario.NewPGOCA()
	if err != nil {
		t.Fatal(err)
	}
	o, err := scenario.PGOObjects(scenario.PGOParams{Name: "hippo", Namespace: "ns", UID: "uid-c", PGVersion: 15, RunAsUser: 101,
		RunAsGroup: 104, SuperPassword: "su", ReplicationPassword: "re"}, ca)
	if err != nil {
		t.Fatal(err)
	}
	sts := o.StatefulSets[0]
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: sts.Name + "-0", Namespace: "ns", UID: "uid-1", Labels: sts.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: "uid-sts", Controller: &yes}},
		},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
}

func TestIsPGOMember(t *testing.T) {
	pod := pgoPod(t)
	if !IsPGOMember(pod) || !runs(pod) {
		t.Fatal("PGO's instance pod is not run")
	}
	other := pod.DeepCopy()
	other.Labels[PGODataLabel] = "pgbackrest"
	if IsPGOMember(other) {
		t.Error("a pgBackRest repo host pod is run as an instance")
	}
	other = pod.DeepCopy()
	other.Labels[EngineLabel] = "patroni"
	if IsPGOMember(other) {
		t.Error("a pod of hactl's engine label is run as a PGO instance")
	}
	if !strings.Contains(PGOSelector, "!"+EngineLabel) {
		t.Errorf("selector %s", PGOSelector)
	}
}

// PGO's database container runs its own command; *:port and the pod's
// DNS names become the member's address, PATRONI_KUBERNETES_POD_IP keeps
// the reported pod IP (the leader Endpoints' address), Patroni gets the
// runner's kubeconfig context, and the mount paths map to the volumes.
func TestTranslatePGO(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	pod := pgoPod(t)
	bin := t.TempDir()
	vols := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = filepath.Join("/sbx/pods/p/volumes", v.Name)
	}
	pe := PodEnv{
		Pod: pod, Address: "127.5.1.2", PodIP: "10.244.5.2", HostIP: "127.0.0.1", Volumes: vols,
		PathEnv: bin + ":/usr/local/bin:/usr/bin:/bin", Home: "/h", Kubeconfig: "/sbx/kubeconfig",
		Objects: volObjects{secrets: map[string]map[string]string{"hippo-patroni-auth": {"superuser-password": "su", "replication-password": "re"}}},
		Resolve: func(h string) (string, bool) {
			if strings.HasPrefix(h, pod.Name+".hippo-pods") {
				return "127.5.1.2", true
			}
			return "", false
		},
	}
	c := pod.Spec.Containers[0]
	l, err := Translate(pe, &c)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(l.Path) != "sh" || l.Argv[len(l.Argv)-2] != "patroni" || l.Argv[len(l.Argv)-1] != vols["patroni-config"] {
		t.Errorf("launch %s %q", l.Path, l.Argv)
	}
	env := map[string]string{}
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, want := range map[string]string{
		"PATRONI_NAME":                       pod.Name,
		"PATRONI_KUBERNETES_POD_IP":          "10.244.5.2",
		"PATRONI_RESTAPI_LISTEN":             "127.5.1.2:8008",
		"PATRONI_POSTGRESQL_LISTEN":          "127.5.1.2:5432",
		"PATRONI_RESTAPI_CONNECT_ADDRESS":    "127.5.1.2:8008",
		"PATRONI_POSTGRESQL_CONNECT_ADDRESS": "127.5.1.2:5432",
		"PATRONI_POSTGRESQL_DATA_DIR":        vols["postgres-data"] + "/pg15",
		"PATRONICTL_CONFIG_FILE":             vols["patroni-config"],
		"PGHOST":                             vols["tmp"] + "/postgres",
		"PATRONI_KUBERNETES_CONTEXT":         KubeContext,
		"KUBECONFIG":                         "/sbx/kubeconfig",
		"PATRONI_REPLICATION_PASSWORD":       "re",
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	if l.Readiness == nil || l.Readiness.URL != "https://127.5.1.2:8008/readiness" {
		t.Errorf("readiness %+v", l.Readiness)
	}
	// Patroni's port is forwarded although PGO declares PostgreSQL's only.
	if got := forwardPorts(pod, c); !slices.Equal(got, []int{5432, 8008}) {
		t.Errorf("forwarded ports %v", got)
	}
}

// The sandbox's directory may lie under a mount path (/tmp): a host
// directory put in is not rewritten again.
func TestPathsOnePass(t *testing.T) {
	s := &substituter{mounts: []mount{{path: "/etc/patroni", host: "/tmp/sbx/v/patroni-config"}, {path: "/tmp", host: "/tmp/sbx/v/tmp"}}}
	if got := s.paths("/etc/patroni/x /tmp/.pgpass /tmpx /etc/patronix"); got != "/tmp/sbx/v/patroni-config/x /tmp/sbx/v/tmp/.pgpass /tmpx /etc/patronix" {
		t.Errorf("paths: %s", got)
	}
}
