package scenario

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BitnamiAuth lays the self-registering shape out as Bitnami's chart does
// with auth.rbac.create: the Secret, its secretKeyRef, the chart's client
// Service name, the entrypoint's and the probe's etcdctl calls as root,
// and nothing of hactl's anywhere.
func TestRenderBitnamiAuth(t *testing.T) {
	p := Params{Name: "e", Namespace: "ns", Replicas: 3, AntiAffinity: "required", PDB: true, BitnamiAuth: true}
	if _, err := Render(SelfRegistering, p); err == nil {
		t.Fatal("rendered BitnamiAuth without a root password")
	}
	p.RootPassword = "s3cr3tPass"
	if _, err := Render(StaticExisting, p); err == nil {
		t.Fatal("rendered BitnamiAuth with the static-existing shape")
	}
	o, err := Render(SelfRegistering, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Secrets) != 1 {
		t.Fatalf("%d Secrets", len(o.Secrets))
	}
	sec := o.Secrets[0]
	if sec.Name != BitnamiSecret("e") || sec.Type != corev1.SecretTypeOpaque || string(sec.Data[BitnamiPasswordKey]) != "s3cr3tPass" {
		t.Fatalf("Secret %s type %s data %v", sec.Name, sec.Type, sec.Data)
	}
	var names []string
	for _, s := range o.Services {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "e-headless,e" {
		t.Fatalf("Services %v", names)
	}
	metas := []metav1.ObjectMeta{o.StatefulSet.ObjectMeta, o.StatefulSet.Spec.Template.ObjectMeta, o.PDB.ObjectMeta, sec.ObjectMeta,
		o.StatefulSet.Spec.VolumeClaimTemplates[0].ObjectMeta}
	for _, s := range o.Services {
		metas = append(metas, s.ObjectMeta)
	}
	for _, m := range metas {
		for _, kv := range []map[string]string{m.Labels, m.Annotations} {
			for k := range kv {
				if strings.Contains(k, "hactl.dev/") {
					t.Errorf("%s carries %s", m.Name, k)
				}
			}
		}
	}
	c := o.StatefulSet.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["ETCD_ON_K8S"].Value != "yes" || env["ETCD_NAME"].Value != "$(MY_POD_NAME)" || env["ALLOW_NONE_AUTHENTICATION"].Value != "no" {
		t.Fatalf("env %+v", env)
	}
	ref := env["ETCD_ROOT_PASSWORD"].ValueFrom
	if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "e" || ref.SecretKeyRef.Key != BitnamiPasswordKey {
		t.Fatalf("ETCD_ROOT_PASSWORD %+v", env["ETCD_ROOT_PASSWORD"])
	}
	script := strings.Join(c.Command, " ")
	if !strings.Contains(script, `--user="root:$ETCD_ROOT_PASSWORD"`) || !strings.Contains(script, "member add") {
		t.Fatalf("entrypoint does not call etcdctl as root:\n%s", script)
	}
	if probe := strings.Join(c.ReadinessProbe.Exec.Command, " "); !strings.Contains(probe, `--user="root:$ETCD_ROOT_PASSWORD"`) {
		t.Fatalf("probe %s", probe)
	}

	// Without it, the self-registering shape is as before.
	p.BitnamiAuth, p.RootPassword = false, ""
	o, err = Render(SelfRegistering, p)
	if err != nil {
		t.Fatal(err)
	}
	c = o.StatefulSet.Spec.Template.Spec.Containers[0]
	if len(o.Secrets) != 0 || o.Services[1].Name != "e-client" || o.StatefulSet.Labels["hactl.dev/engine"] != "etcd" ||
		strings.Contains(strings.Join(c.Command, " "), "--user") || c.ReadinessProbe.Exec.Command[0] != "etcdctl" {
		t.Fatalf("BitnamiAuth off: secrets %d, services %s, labels %v", len(o.Secrets), o.Services[1].Name, o.StatefulSet.Labels)
	}
}
