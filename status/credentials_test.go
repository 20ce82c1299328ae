package status

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hactl-dev/hactl/model"
)

// ReadCredentials takes the keys a layout names (Bitnami's file names,
// druid's CA dataKey) and no others, and names a missing one without
// printing a value.
func TestReadCredentialsNamedKeys(t *testing.T) {
	secrets := map[string]map[string][]byte{
		"bitnami":  {"tls.crt": []byte("OTHER-CERT"), "server.pem": []byte("CERT"), "server-key.pem": []byte("KEY"), "root.pem": []byte("CA")},
		"druid-ca": {"bundle.crt": []byte("DRUID-CA")},
	}
	get := func(_ context.Context, _, name string) (*corev1.Secret, error) {
		d, ok := secrets[name]
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
		}
		return &corev1.Secret{Data: d}, nil
	}
	c := model.ClusterFacts{Namespace: "db", TLSSecret: "bitnami", TLSCertKey: "server.pem", TLSKeyKey: "server-key.pem",
		TLSCASecret: "bitnami", TLSCAKey: "root.pem", TLSSecretFrom: "the chart's auth.client.existingSecret"}
	cr, err := ReadCredentials(context.Background(), get, c, "probe the members")
	if err != nil {
		t.Fatal(err)
	}
	if string(cr.CertPEM) != "CERT" || string(cr.KeyPEM) != "KEY" || string(cr.CAPEM) != "CA" {
		t.Errorf("credentials %q %q %q: not the named keys", cr.CertPEM, cr.KeyPEM, cr.CAPEM)
	}
	c.TLSKeyKey = "missing.pem"
	if _, err := ReadCredentials(context.Background(), get, c, "probe the members"); err == nil || !strings.Contains(err.Error(), "missing.pem") || strings.Contains(err.Error(), "CERT") {
		t.Errorf("a missing key: %v", err)
	}
	d := model.ClusterFacts{Namespace: "db", TLSCASecret: "druid-ca", TLSCAKey: "bundle.crt", TLSSecretFrom: "the Etcd's spec.etcd.clientUrlTls"}
	if cr, err := ReadCredentials(context.Background(), get, d, "probe the members"); err != nil || string(cr.CAPEM) != "DRUID-CA" {
		t.Errorf("druid's CA dataKey: %v, %+v", err, cr)
	}
	d.TLSCAKey = ""
	if _, err := ReadCredentials(context.Background(), get, d, "probe the members"); err == nil || !strings.Contains(err.Error(), "no ca.crt") {
		t.Errorf("the default CA key: %v", err)
	}
}
