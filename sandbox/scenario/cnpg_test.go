package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
)

func cnpgTestParams() CNPGParams {
	return CNPGParams{Name: "cluster-example", Namespace: "ns", UID: "uid-1", PostgresUID: 105, PostgresGID: 110,
		SuperPassword: "su", AppPassword: "ap"}
}

// noHactlKeys fails when any label or annotation key of the JSON of obj
// names hactl.
func noHactlKeys(t *testing.T, what string, obj any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if (strings.HasSuffix(path, ".labels") || strings.HasSuffix(path, ".annotations") || strings.HasSuffix(path, ".matchLabels") ||
					strings.HasSuffix(path, ".selector")) && strings.Contains(k, "hactl") {
					t.Errorf("%s: key %s%s", what, path, "."+k)
				}
				walk(val, path+"."+k)
			}
		case []any:
			for _, val := range x {
				walk(val, path+"[]")
			}
		}
	}
	var v any
	_ = json.Unmarshal(b, &v)
	walk(v, "")
}

func TestCNPGPod(t *testing.T) {
	p := cnpgTestParams()
	pod := CNPGPod(p, 2)
	if pod.Name != "cluster-example-2" {
		t.Errorf("name %s", pod.Name)
	}
	for k, v := range map[string]string{
		"cnpg.io/cluster": "cluster-example", "cnpg.io/instanceName": "cluster-example-2", "cnpg.io/podRole": "instance",
		"app.kubernetes.io/managed-by": "cloudnative-pg", "app.kubernetes.io/name": "postgresql",
	} {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if pod.Annotations["cnpg.io/nodeSerial"] != "2" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	if len(pod.OwnerReferences) != 1 {
		t.Fatalf("owners %v", pod.OwnerReferences)
	}
	o := pod.OwnerReferences[0]
	if o.APIVersion != "postgresql.cnpg.io/v1" || o.Kind != "Cluster" || o.Name != "cluster-example" || o.UID != "uid-1" || o.Controller == nil || !*o.Controller {
		t.Errorf("owner %+v", o)
	}
	c := pod.Spec.Containers[0]
	if c.Name != "postgres" || c.Image != CNPGImage || strings.Join(c.Command, " ") != "/controller/manager instance run" {
		t.Errorf("container %s %s %v", c.Name, c.Image, c.Command)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["PGDATA"] != "/var/lib/postgresql/data/pgdata" || env["POD_NAME"] != pod.Name || env["CLUSTER_NAME"] != p.Name ||
		env["PGHOST"] != "/controller/run" || env["PGPORT"] != "5432" || env["NAMESPACE"] != "ns" {
		t.Errorf("env %v", env)
	}
	ports := map[string]int32{}
	for _, pt := range c.Ports {
		ports[pt.Name] = pt.ContainerPort
	}
	if ports["postgresql"] != 5432 || ports["metrics"] != 9187 || ports["status"] != 8000 {
		t.Errorf("ports %v", ports)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.StartupProbe.HTTPGet.Path != "/startupz" {
		t.Errorf("probes")
	}
	if pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "cluster-example-2" {
		t.Errorf("pgdata claim %v", pod.Spec.Volumes[0])
	}
	if pod.Spec.ServiceAccountName != "cluster-example" || *pod.Spec.SecurityContext.RunAsUser != 105 {
		t.Errorf("service account / user")
	}
	noHactlKeys(t, "pod", pod)
	s := &Scenario{Name: "cnpg", Shape: CNPGOperator, Cluster: "cluster-example"}
	if !s.Owns(pod.Name) || s.Owns("cluster-example-rw") || s.Owns("other-1") {
		t.Error("Owns")
	}
}

func TestCNPGObjects(t *testing.T) {
	p := cnpgTestParams()
	l := CNPGObjects(p)
	names := func(kind string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", kind, got, want)
		}
	}
	var svcs, pdbs, secrets, roles []string
	for _, s := range l.Services {
		svcs = append(svcs, s.Name)
		if s.OwnerReferences[0].Name != p.Name {
			t.Errorf("service %s owner", s.Name)
		}
	}
	for _, b := range l.PDBs {
		pdbs = append(pdbs, b.Name)
	}
	for _, s := range l.Secrets {
		secrets = append(secrets, s.Name)
		for _, k := range []string{"username", "password", "user", "dbname", "host", "port", "uri", "jdbc-uri", "pgpass", "fqdn-uri", "fqdn-jdbc-uri"} {
			if _, ok := s.StringData[k]; !ok {
				t.Errorf("secret %s lacks %s", s.Name, k)
			}
		}
	}
	for _, r := range l.Roles {
		roles = append(roles, r.Name)
	}
	names("services", svcs, "cluster-example-r", "cluster-example-ro", "cluster-example-rw")
	names("pdbs", pdbs, "cluster-example", "cluster-example-primary")
	names("secrets", secrets, "cluster-example-superuser", "cluster-example-app")
	names("roles", roles, "cluster-example", CNPGStandInRole("cluster-example"))
	if sel := l.Services[2].Spec.Selector; sel["cnpg.io/instanceRole"] != "primary" || sel["cnpg.io/cluster"] != p.Name {
		t.Errorf("-rw selector %v", sel)
	}
	if l.Secrets[0].StringData["username"] != "postgres" || l.Secrets[0].StringData["password"] != "su" {
		t.Errorf("superuser secret %v", l.Secrets[0].StringData)
	}
	if m := l.PDBs[0].Spec.MinAvailable.IntValue(); m != 1 {
		t.Errorf("replicas PDB minAvailable %d", m)
	}
	noHactlKeys(t, "objects", l)
	pvc := CNPGPVC(p, 1, "ready")
	if pvc.Name != "cluster-example-1" || pvc.Labels["cnpg.io/pvcRole"] != "PG_DATA" || pvc.Annotations["cnpg.io/pvcStatus"] != "ready" {
		t.Errorf("pvc %v %v", pvc.Labels, pvc.Annotations)
	}
	noHactlKeys(t, "pvc", pvc)
	noHactlKeys(t, "cluster", CNPGCluster(p).Object)
	if CNPGCluster(p).GetAPIVersion() != cnpgstandin.Group+"/v1" {
		t.Error("apiVersion")
	}
}
