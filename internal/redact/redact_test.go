package redact_test

import (
	"encoding/base64"
	"encoding/json"
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
		"args: [\"--token=" + c + "b\", \"--initial-cluster-token=etcd-prod\"]",
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
	for _, keep := range []string{"--initial-cluster-token=etcd-prod", "Authorization: Bearer REDACTED", "name: PGPASSWORD", "key: password", "secretName: pg-tls", "tokenFile: /var/run/token", "as postgres", `"username":"postgres"`, "BEGIN EC PRIVATE KEY"} {
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

// TestEscapedAndFoldedValuesAreFound: a Secret value with characters
// JSON escapes (<, &, ", \) and a long passphrase with spaces (which a
// YAML encoder folds across lines) are found in the decoded document,
// before any encoder changes their bytes; a key named like a credential
// loses its value whole.
func TestEscapedAndFoldedValuesAreFound(t *testing.T) {
	r := redact.New()
	odd := `p<a"s&s\wCanary1`
	phrase := "correct horse battery staple Canary2 and many more words so that a YAML encoder folds this line"
	r.AddSecret("Secret db/a key password", "password", []byte(odd))
	r.AddSecret("Secret db/a key passphrase", "passphrase", []byte(phrase))
	doc := map[string]any{"message": "login failed for " + odd, "note": phrase, "nested": []any{map[string]any{"apiToken": "Canary3"}}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), odd) {
		t.Fatal("the test needs a value JSON escapes")
	}
	out := string(r.JSON("x.json", b))
	for _, c := range []string{"Canary1", "Canary2", "Canary3"} {
		if strings.Contains(out, c) {
			t.Errorf("%s survived:\n%s", c, out)
		}
	}
	if !strings.Contains(out, `"message": "login failed for REDACTED"`) {
		t.Errorf("the document lost its shape:\n%s", out)
	}
	if got := string(r.JSON("y.txt", []byte("not json "+odd))); strings.Contains(got, "Canary1") {
		t.Errorf("text that is not JSON is not redacted: %s", got)
	}
}

// TestWholeValuesOnceEach: a quoted value loses all its words and keeps
// its quotes; a nested object after a credential-named key, and base64
// padding after a long run that holds "auth", are left alone; a value
// already withheld is not counted again; the lines of a Secret holding
// a file are searched for one by one, and escaped forms too.
func TestWholeValuesOnceEach(t *testing.T) {
	r := redact.New()
	r.AddSecret("Secret db/f key pgpass", "pgpass", []byte("host: db\npassword: Line9Canary\n"))
	r.AddSecret("Secret db/q key password", "password", []byte("tab\tCanary8"))
	in := `password: "correct horse Canary7"` + "\n" +
		`{"auth": {"mode": "x"}}` + "\n" +
		"MIIBauthAAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMMNNNN==\n" +
		"url: s3://u:REDACTED@h/x and s3://v:Canary6@h/y\n" +
		"log: login with Line9Canary failed; quoted \"tab\\tCanary8\"; printed tabCanary8\n"
	out := string(r.Text("f", []byte(in)))
	for _, c := range []string{"Canary7", "horse", "Canary6", "Line9Canary", "Canary8"} {
		if strings.Contains(out, c) {
			t.Errorf("%s survived:\n%s", c, out)
		}
	}
	for _, keep := range []string{`password: "REDACTED"`, `{"auth": {"mode": "x"}}`, "NNNN==\n", "s3://u:REDACTED@h/x"} {
		if !strings.Contains(out, keep) {
			t.Errorf("%q was changed:\n%s", keep, out)
		}
	}
	if sum := string(r.Summary()); !strings.Contains(sum, "1 × password in a URL") {
		t.Errorf("a withheld URL password was counted again:\n%s", sum)
	}
}
