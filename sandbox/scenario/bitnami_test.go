package scenario

import (
	"crypto/tls"
	"crypto/x509"
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

// BitnamiTLS lays the chart's client TLS out as its statefulset.yaml
// renders auth.client.secureTransport and enableAuthentication with
// existingSecret <name>-client-certs, cert.pem, key.pem and no
// caFilename: the env, the mount, the volume, the Secret's files, and
// etcdctl calls dialling https with them; the key pair serves and is a
// client certificate, for every name the members are dialled by.
func TestRenderBitnamiTLS(t *testing.T) {
	addrs := []string{"127.9.1.1", "127.9.1.2", "127.9.1.3"}
	certs, err := MintBitnamiCerts("e", "ns", 3, addrs)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Name: "e", Namespace: "ns", Replicas: 3, AntiAffinity: "required", PDB: true, ClientTLS: certs}
	if _, err := Render(SelfRegistering, p); err == nil {
		t.Fatal("rendered client TLS without BitnamiAuth")
	}
	p.BitnamiAuth, p.RootPassword = true, "s3cr3tPass"
	o, err := Render(SelfRegistering, p)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range o.Secrets {
		secrets[s.Name] = s
	}
	if len(secrets) != 2 || secrets[BitnamiSecret("e")] == nil {
		t.Fatalf("Secrets %v", secrets)
	}
	sec := secrets["e-client-certs"]
	if sec == nil || BitnamiCertsSecret("e") != "e-client-certs" {
		t.Fatalf("no Secret e-client-certs: %v", secrets)
	}
	if len(sec.Data) != 3 || string(sec.Data["cert.pem"]) != string(certs.Cert) || string(sec.Data["key.pem"]) != string(certs.Key) ||
		string(sec.Data["ca.crt"]) != string(certs.CA) {
		t.Fatalf("Secret keys %v", keys(sec.Data))
	}
	for k := range sec.Labels {
		if strings.Contains(k, "hactl.dev/") {
			t.Errorf("the Secret carries %s", k)
		}
	}

	spec := o.StatefulSet.Spec.Template.Spec
	c := spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for k, want := range map[string]string{
		"ETCD_CERT_FILE":             "/opt/bitnami/etcd/certs/client/cert.pem",
		"ETCD_KEY_FILE":              "/opt/bitnami/etcd/certs/client/key.pem",
		"ETCD_CLIENT_CERT_AUTH":      "true",
		"ETCD_TRUSTED_CA_FILE":       "/opt/bitnami/etcd/certs/client/ca.crt",
		"ETCD_LISTEN_CLIENT_URLS":    "https://0.0.0.0:2379",
		"ETCD_ADVERTISE_CLIENT_URLS": "https://$(MY_POD_NAME).e-headless.$(MY_POD_NAMESPACE).svc.cluster.local:2379",
		"ETCD_LISTEN_PEER_URLS":      "http://0.0.0.0:2380",
		"ETCD_ON_K8S":                "yes",
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	if !strings.HasPrefix(env["ETCD_INITIAL_CLUSTER"], "e-0=http://") || !strings.HasPrefix(env["CLUSTER_CLIENT_URLS"], "https://e-0.e-headless.ns.svc.cluster.local:2379,") {
		t.Errorf("initial cluster %q, client URLs %q", env["ETCD_INITIAL_CLUSTER"], env["CLUSTER_CLIENT_URLS"])
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == "etcd-client-certs" {
			mounted = m.MountPath == "/opt/bitnami/etcd/certs/client/" && m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Name != "etcd-client-certs" || spec.Volumes[0].Secret == nil ||
		spec.Volumes[0].Secret.SecretName != "e-client-certs" || spec.Volumes[0].Secret.DefaultMode == nil || *spec.Volumes[0].Secret.DefaultMode != 256 {
		t.Fatalf("volumes %+v", spec.Volumes)
	}
	tlsFlags := `--cacert="$ETCD_TRUSTED_CA_FILE" --cert="$ETCD_CERT_FILE" --key="$ETCD_KEY_FILE"`
	if script := strings.Join(c.Command, " "); !strings.Contains(script, tlsFlags) {
		t.Errorf("the entrypoint's etcdctl does not dial with the Secret's files:\n%s", script)
	}
	probe := strings.Join(c.ReadinessProbe.Exec.Command, " ")
	if !strings.Contains(probe, "--endpoints=https://127.0.0.1:2379") || !strings.Contains(probe, tlsFlags) || !strings.Contains(probe, `--user="root:$ETCD_ROOT_PASSWORD"`) {
		t.Errorf("probe %s", probe)
	}

	// The key pair: signed by ca.crt, serving and client, for every name
	// the members and their clients dial.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		t.Fatal("no CA in ca.crt")
	}
	pair, err := tls.X509KeyPair(sec.Data["cert.pem"], sec.Data["key.pem"])
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	usages := map[x509.ExtKeyUsage]bool{}
	for _, u := range leaf.ExtKeyUsage {
		usages[u] = true
	}
	if !usages[x509.ExtKeyUsageServerAuth] || !usages[x509.ExtKeyUsageClientAuth] {
		t.Errorf("usages %v: want serverAuth and clientAuth", leaf.ExtKeyUsage)
	}
	if leaf.Subject.CommonName == BitnamiRootUser {
		t.Error("the certificate's CN is the root user: a certificate alone would log in")
	}
	hosts := []string{"e-0.e-headless.ns.svc", "e-2.e-headless.ns.svc.cluster.local", "localhost", "127.0.0.1"}
	hosts = append(hosts, addrs...)
	for _, h := range hosts {
		for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
				t.Errorf("%s (%v): %v", h, u, err)
			}
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "127.9.1.4", Roots: pool}); err == nil {
		t.Error("the certificate names an address no member has")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
