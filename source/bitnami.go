package source

import (
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// bitnamiClientCerts is where Bitnami's etcd chart mounts the Secret
// auth.client.existingSecret (volume etcd-client-certs): the members'
// own key pair and CA, which the chart's own etcdctl health check also
// dials them with (bitnami/charts bitnami/etcd/templates/statefulset.yaml).
const bitnamiClientCerts = "/opt/bitnami/etcd/certs/client/"

// bitnamiTLS sets w's client TLS to what Bitnami's chart gives its own
// etcdctl, where sts is the chart's (its etcd container sets
// ETCD_ON_K8S=yes) and serves TLS from that Secret (ETCD_CERT_FILE under
// the mount): the key pair of ETCD_CERT_FILE and ETCD_KEY_FILE when the
// members ask clients for a certificate (ETCD_CLIENT_CERT_AUTH), and the
// CA of ETCD_TRUSTED_CA_FILE (ca.crt when not set), each under the key
// its file names. Auto-TLS (self-signed, ETCD_AUTO_TLS) names no Secret.
func bitnamiTLS(sts *appsv1.StatefulSet, w *Workload) {
	spec := sts.Spec.Template.Spec
	secret := ""
	for _, v := range spec.Volumes {
		if v.Name == "etcd-client-certs" && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret == "" {
		return
	}
	for _, c := range spec.Containers {
		env := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env[e.Name] = e.Value
			}
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == "etcd-client-certs" && strings.TrimSuffix(m.MountPath, "/") == strings.TrimSuffix(bitnamiClientCerts, "/"))
		}
		file := func(k string) string {
			if f, ok := strings.CutPrefix(env[k], bitnamiClientCerts); ok && f != "" && !strings.Contains(f, "/") {
				return path.Base(f)
			}
			return ""
		}
		if env["ETCD_ON_K8S"] != "yes" || !mounted || file("ETCD_CERT_FILE") == "" {
			continue
		}
		w.TLSCASecret, w.TLSCAKey = secret, file("ETCD_TRUSTED_CA_FILE")
		if w.TLSCAKey == "ca.crt" {
			w.TLSCAKey = ""
		}
		if env["ETCD_CLIENT_CERT_AUTH"] == "true" {
			w.TLSSecret, w.TLSCertKey, w.TLSKeyKey = secret, file("ETCD_CERT_FILE"), file("ETCD_KEY_FILE")
		}
		w.TLSSecretFrom = "the chart's auth.client.existingSecret (volume etcd-client-certs of StatefulSet " + sts.Name + ")"
		return
	}
}
