package scenario

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRenderEveryShape(t *testing.T) {
	for _, shape := range []Shape{StaticExisting, SelfRegistering, StaticNew} {
		for _, pdb := range []bool{true, false} {
			o, err := Render(shape, Params{Name: "c", Namespace: "ns", Replicas: 3, PDB: pdb, AntiAffinity: "required", Node: "node-1"})
			if err != nil {
				t.Fatalf("%v: %v", shape, err)
			}
			sts := o.StatefulSet
			if sts.Name != "c" || sts.Namespace != "ns" || *sts.Spec.Replicas != 3 {
				t.Fatalf("%v: unexpected StatefulSet %s/%s", shape, sts.Namespace, sts.Name)
			}
			for _, labels := range []map[string]string{sts.Labels, sts.Spec.Template.Labels} {
				if labels["hactl.dev/engine"] != "etcd" {
					t.Fatalf("%v: missing engine label: %v", shape, labels)
				}
			}
			if len(o.Services) != 2 || (o.PDB != nil) != pdb {
				t.Fatalf("%v: services %d, pdb %v", shape, len(o.Services), o.PDB != nil)
			}
			spec := sts.Spec.Template.Spec
			if spec.NodeSelector["kubernetes.io/hostname"] != "node-1" || spec.Affinity == nil {
				t.Fatalf("%v: placement not rendered", shape)
			}
			c := spec.Containers[0]
			if c.Name != "etcd" || c.ReadinessProbe == nil {
				t.Fatalf("%v: container %+v", shape, c)
			}
			text := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
			for _, e := range c.Env {
				text += " " + e.Name + "=" + e.Value
			}
			want := map[Shape]string{
				StaticExisting:  "--initial-cluster-state=existing",
				StaticNew:       "--initial-cluster-state=new",
				SelfRegistering: "member add",
			}[shape]
			if !strings.Contains(text, want) {
				t.Fatalf("%v: %q not in %s", shape, want, text)
			}
			if !strings.Contains(text, "c-2=http://c-2.c-headless") {
				t.Fatalf("%v: initial cluster not rendered: %s", shape, text)
			}
		}
	}
}

func TestRenderFormingState(t *testing.T) {
	o, err := Render(StaticExisting, Params{Name: "c", Namespace: "ns", Replicas: 3, State: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(o.StatefulSet.Spec.Template.Spec.Containers[0].Args, " "), "--initial-cluster-state=new") {
		t.Fatal("State is not rendered")
	}
}

// The lagging learner's StatefulSet grows to 4 pods on 3 nodes and is
// rolled: only a constraint on the voters' ordinals keeps its 3 voters on
// 3 nodes through the rolling update, whatever order the scheduler sees.
func TestRenderSpreadVoters(t *testing.T) {
	o, err := Render(StaticExisting, Params{Name: "c", Namespace: "ns", Replicas: 4, AntiAffinity: "spread-voters", Voters: 3})
	if err != nil {
		t.Fatal(err)
	}
	spec := o.StatefulSet.Spec.Template.Spec
	if spec.Affinity != nil || len(spec.TopologySpreadConstraints) != 1 {
		t.Fatalf("affinity %+v, spread constraints %+v", spec.Affinity, spec.TopologySpreadConstraints)
	}
	c := spec.TopologySpreadConstraints[0]
	if c.MaxSkew != 1 || c.TopologyKey != "kubernetes.io/hostname" || c.WhenUnsatisfiable != "DoNotSchedule" {
		t.Fatalf("constraint %+v", c)
	}
	if c.LabelSelector == nil || c.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "c" || len(c.LabelSelector.MatchExpressions) != 1 {
		t.Fatalf("selector %+v", c.LabelSelector)
	}
	e := c.LabelSelector.MatchExpressions[0]
	if e.Key != "apps.kubernetes.io/pod-index" || e.Operator != "In" || strings.Join(e.Values, ",") != "0,1,2" {
		t.Fatalf("expression %+v", e)
	}
}

func TestRenderPatroni(t *testing.T) {
	if _, err := Render(Patroni, Params{Name: "pg", Namespace: "ns", Replicas: 3}); err == nil {
		t.Fatal("rendered Patroni without a runAsUser")
	}
	o, err := Render(Patroni, Params{Name: "pg", Namespace: "ns", Replicas: 3, PDB: true, RunAsUser: 101, RunAsGroup: 104,
		PGBinDir: "/usr/lib/postgresql/15/bin", KubeContext: "ctx", SynchronousMode: true, NoRewind: true})
	if err != nil {
		t.Fatal(err)
	}
	sts := o.StatefulSet
	if sts.Labels["hactl.dev/engine"] != "patroni" || sts.Spec.Template.Labels["cluster-name"] != "pg" ||
		sts.Spec.PodManagementPolicy != "Parallel" || *sts.Spec.Template.Spec.SecurityContext.RunAsUser != 101 {
		t.Fatalf("StatefulSet %+v", sts.ObjectMeta)
	}
	env := map[string]string{}
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["PATRONI_SCOPE"] != "pg" || env["PATRONI_KUBERNETES_CONTEXT"] != "ctx" || env["PATRONI_POSTGRESQL_BIN_DIR"] != "/usr/lib/postgresql/15/bin" {
		t.Fatalf("env %v", env)
	}
	if len(o.Services) != 2 || o.PDB == nil || len(o.ServiceAccounts) != 1 || len(o.Roles) != 1 || len(o.RoleBindings) != 1 ||
		len(o.Secrets) != 1 || len(o.ConfigMaps) != 1 {
		t.Fatalf("objects %+v", o)
	}
	if sel := o.Services[0].Spec.Selector; o.Services[0].Name != "pg" || sel["role"] != "master" || sel["cluster-name"] != "pg" {
		t.Fatalf("primary Service %+v", o.Services[0])
	}
	conf := o.ConfigMaps[0].Data["patroni.yml"]
	for _, want := range []string{"synchronous_mode: true", "use_pg_rewind: false", "ttl: 30", "checkpoint: fast", "unix_socket_directories: ''"} {
		if !strings.Contains(conf, want) {
			t.Errorf("patroni.yml lacks %q:\n%s", want, conf)
		}
	}
}

// RESTAuth adds the basic-auth Secret, names it on the StatefulSet for
// hactl and gives Patroni the same credentials; without it, none of that.
func TestRenderPatroniRESTAuth(t *testing.T) {
	base := Params{Name: "pg", Namespace: "ns", Replicas: 3, RunAsUser: 101, RunAsGroup: 104, PGBinDir: "/bin", KubeContext: "ctx"}
	for _, on := range []bool{false, true} {
		p := base
		p.RESTAuth = on
		o, err := Render(Patroni, p)
		if err != nil {
			t.Fatal(err)
		}
		var secret *corev1.Secret
		for _, s := range o.Secrets {
			if s.Name == "pg-rest-auth" {
				secret = s
			}
		}
		refs := map[string]string{}
		for _, e := range o.StatefulSet.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			}
		}
		annotation := o.StatefulSet.Annotations["hactl.dev/rest-auth-secret"]
		if !on {
			if secret != nil || annotation != "" || refs["PATRONI_RESTAPI_USERNAME"] != "" {
				t.Fatalf("RESTAuth off: secret %v, annotation %q, env %v", secret != nil, annotation, refs)
			}
			continue
		}
		if secret == nil || secret.Type != corev1.SecretTypeBasicAuth || secret.StringData["username"] != RESTUser || secret.StringData["password"] != RESTPassword {
			t.Fatalf("RESTAuth on: Secret %+v", secret)
		}
		if annotation != "pg-rest-auth" || refs["PATRONI_RESTAPI_USERNAME"] != "pg-rest-auth/username" || refs["PATRONI_RESTAPI_PASSWORD"] != "pg-rest-auth/password" {
			t.Fatalf("RESTAuth on: annotation %q, env %v", annotation, refs)
		}
	}
}
