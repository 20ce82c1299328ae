package redact_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/internal/redact"
)

// TestCanariesNeverSurvive: every credential-carrying form a report
// meets (YAML, JSON, logs, command lines, URLs, PEM) loses its canary,
// and what names the credential survives.
func TestCanariesNeverSurvive(t *testing.T) {
	const c = "CanaryXy7Qw"
	r := redact.New()
	r.AddSecret("Secret db/pg-auth key password", "password", []byte("  sekret-"+c+"\n"))
	r.AddSecret("Secret db/pg-auth key username", "username", []byte("postgres"))
	r.AddSecret("Secret db/pg-auth key superuser-username", "superuser-username", []byte("postgres"))
	r.AddSecret("Secret db/pg-auth key flag", "flag", []byte("on"))
	in := strings.Join([]string{
		"env:\n- name: PGPASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: pg-auth\n      key: password",
		"log line: connecting with password sekret-" + c + " as postgres",
		"base64 in a ConfigMap: " + base64.StdEncoding.EncodeToString([]byte("sekret-"+c)),
		"  BACKUP_URL: s3://user:" + c + "@minio.example:9000/bucket",
		`{"superuser":{"password":"` + c + `a","username":"postgres"}}`,
		"args: [\"--token=" + c + "b\", \"--initial-cluster-token=" + c + "c\"]",
		"primary_conninfo: 'host=pg-0 user=replicator password=" + c + "d sslmode=prefer'",
		"Authorization: Bearer " + c + "e.f.g",
		"AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP and AWS_SECRET_ACCESS_KEY=" + c + "f",
		"token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLWJ5dGVz",
		"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI" + c + "g\n-----END EC PRIVATE KEY-----",
		"secretName: pg-tls\n  tokenFile: /var/run/token",
	}, "\n")
	out := string(r.Text("f.yaml", []byte(in)))
	if strings.Contains(out, c) || strings.Contains(out, "AKIAABCDEFGHIJKLMNOP") || strings.Contains(out, "eyJzdWIiOiJzeXN0ZW0ifQ") {
		t.Fatalf("a canary survived:\n%s", out)
	}
	for _, keep := range []string{"name: PGPASSWORD", "key: password", "secretName: pg-tls", "tokenFile: /var/run/token", "as postgres", `"username":"postgres"`, "BEGIN EC PRIVATE KEY"} {
		if !strings.Contains(out, keep) {
			t.Errorf("%q was lost:\n%s", keep, out)
		}
	}
	sum := string(r.Summary())
	if strings.Contains(sum, c) {
		t.Fatalf("the summary names a value:\n%s", sum)
	}
	for _, want := range []string{"f.yaml", "the value of a Secret", "Secret db/pg-auth key password", "password in a URL", "private key (PEM block)", "Secret db/pg-auth key username", "Secret db/pg-auth key superuser-username", "Secret db/pg-auth key flag"} {
		if !strings.Contains(sum, want) {
			t.Errorf("the summary does not say %q:\n%s", want, sum)
		}
	}
}

// TestNothingToWithhold: ordinary text passes unchanged, and the summary
// says nothing was replaced.
func TestNothingToWithhold(t *testing.T) {
	r := redact.New()
	in := "member pg-1 is streaming from pg-0, lag 0 bytes; timeline 3\nkey: value\nsecretKeyRef:\n"
	if out := string(r.Text("x", []byte(in))); out != in {
		t.Fatalf("changed:\n%s", out)
	}
	if !strings.Contains(string(r.Summary()), "Nothing was replaced") {
		t.Fatal(string(r.Summary()))
	}
}

func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"PGPASSWORD": true, "PATRONI_SUPERUSER_PASSWORD": true, "AWS_SECRET_ACCESS_KEY": true, "--token": true, "API_KEY": true,
		"PGUSER": false, "PATRONI_SCOPE": false, "secretName": false, "ETCD_NAME": false, "TOKEN_FILE": false,
	} {
		if got := redact.CredentialName(name); got != want {
			t.Errorf("CredentialName(%q) = %v", name, got)
		}
	}
}
