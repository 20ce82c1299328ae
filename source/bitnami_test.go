package source

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
)

// bitnamiSTS is Bitnami's etcd StatefulSet with client TLS from Secret
// etcd-certs (auth.client.secureTransport), env as the chart renders it.
func bitnamiSTS(env ...corev1.EnvVar) appsv1.StatefulSet {
	return appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "etcd"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "etcd", Image: "docker.io/bitnami/etcd:3.6",
				Env:          append([]corev1.EnvVar{{Name: "ETCD_ON_K8S", Value: "yes"}}, env...),
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/bitnami/etcd"}, {Name: "etcd-client-certs", MountPath: bitnamiClientCerts, ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "etcd-client-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-certs"}}}},
		}}},
	}
}

// Bitnami's chart with client TLS: hactl dials as the chart's own
// etcdctl does, with the Secret auth.client.existingSecret, each file
// under the key its variable names; without client-certificate auth the
// CA alone; without TLS, or with auto-TLS, no Secret.
func TestBitnamiTLS(t *testing.T) {
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	detect := func(map[string]string, model.PodTemplate) (model.Engine, bool) { return "etcd", true }
	for _, tc := range []struct {
		name                                    string
		sts                                     appsv1.StatefulSet
		secret, ca, caKey, certKey, keyKey, via string
	}{
		{name: "client-certificate auth, custom file names",
			sts: bitnamiSTS(env("ETCD_CERT_FILE", bitnamiClientCerts+"tls.crt", "ETCD_KEY_FILE", bitnamiClientCerts+"tls.key",
				"ETCD_CLIENT_CERT_AUTH", "true", "ETCD_TRUSTED_CA_FILE", bitnamiClientCerts+"root.pem")...),
			secret: "etcd-certs", ca: "etcd-certs", caKey: "root.pem", certKey: "tls.crt", keyKey: "tls.key", via: "auth.client.existingSecret"},
		{name: "client-certificate auth, the chart's default names",
			sts: bitnamiSTS(env("ETCD_CERT_FILE", bitnamiClientCerts+"cert.pem", "ETCD_KEY_FILE", bitnamiClientCerts+"key.pem",
				"ETCD_CLIENT_CERT_AUTH", "true", "ETCD_TRUSTED_CA_FILE", bitnamiClientCerts+"ca.crt")...),
			secret: "etcd-certs", ca: "etcd-certs", certKey: "cert.pem", keyKey: "key.pem", via: "auth.client.existingSecret"},
		{name: "TLS without client certificates: the CA alone",
			sts: bitnamiSTS(env("ETCD_CERT_FILE", bitnamiClientCerts+"cert.pem", "ETCD_KEY_FILE", bitnamiClientCerts+"key.pem")...),
			ca:  "etcd-certs", via: "auth.client.existingSecret"},
		{name: "no TLS", sts: bitnamiSTS()},
		{name: "auto-TLS", sts: bitnamiSTS(env("ETCD_AUTO_TLS", "true")...)},
		{name: "not the chart's (no ETCD_ON_K8S)", sts: func() appsv1.StatefulSet {
			s := bitnamiSTS(env("ETCD_CERT_FILE", bitnamiClientCerts+"cert.pem", "ETCD_CLIENT_CERT_AUTH", "true")...)
			s.Spec.Template.Spec.Containers[0].Env = s.Spec.Template.Spec.Containers[0].Env[1:]
			return s
		}()},
	} {
		ws := (StatefulSets{}).Workloads(Objects{StatefulSets: []appsv1.StatefulSet{tc.sts}}, detect)
		if len(ws) != 1 {
			t.Fatalf("%s: %d workloads", tc.name, len(ws))
		}
		w := ws[0]
		if w.TLSSecret != tc.secret || w.TLSCASecret != tc.ca || w.TLSCAKey != tc.caKey || w.TLSCertKey != tc.certKey || w.TLSKeyKey != tc.keyKey {
			t.Errorf("%s: TLS %q (%q, %q), CA %q (%q); want %q (%q, %q), %q (%q)", tc.name, w.TLSSecret, w.TLSCertKey, w.TLSKeyKey, w.TLSCASecret, w.TLSCAKey,
				tc.secret, tc.certKey, tc.keyKey, tc.ca, tc.caKey)
		}
		if (tc.via == "") != (w.TLSSecretFrom == "") || (tc.via != "" && !strings.Contains(w.TLSSecretFrom, tc.via)) {
			t.Errorf("%s: from %q", tc.name, w.TLSSecretFrom)
		}
	}
}
