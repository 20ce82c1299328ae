package artifact_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest/emulators"
	"github.com/hactl-dev/hactl/internal/testbins"
)

// exerciseStore publishes a generation through s, lists, verifies and
// reads it back: the round trip every store driver must make.
func exerciseStore(t *testing.T, s *artifact.Store, log *outputLog) {
	t.Helper()
	ctx := deadline(t)
	big := randBytes(t, 3<<20+17)
	publish(t, s, identity("g1"), map[string][]byte{"snapshot.db": big, "meta/info.json": []byte(`{"a":1}`)})
	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Generation != "g1" || !entries[0].Published() {
		t.Fatalf("list: %+v, want g1 published", entries)
	}
	m, err := s.Verify(ctx, "g1", artifact.Expect{ClusterID: identity("g1").ClusterID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.add(fmt.Sprintf("%+v %s", m, s))
	for _, f := range m.Files {
		if f.Path != "snapshot.db" {
			continue
		}
		r, err := s.Open(ctx, m, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("read back %d bytes (%v), want the %d published", len(got), err, len(big))
		}
	}
	// Published once: a second publish of g1 from another cluster is refused.
	u, err := s.Begin(ctx, "g1", artifact.UploadOptions{CreatedBy: "test"})
	if err == nil {
		w, _ := u.Create(ctx, "snapshot.db")
		_, _ = w.Write([]byte("x"))
		_ = w.Close()
		other := identity("g1")
		other.ClusterID = "aaaaaaaaaaaaaaaa"
		_, err = u.Publish(ctx, other)
	}
	if err == nil {
		t.Fatal("a second publish of g1 from another cluster was accepted")
	}
	log.errf(err)
}

// TestGCSStoreWithServiceAccountKey: a gs:// store opened with a Secret's
// service-account JSON key makes the round trip against fake-gcs-server,
// whose gate refuses requests without the access token that only an
// assertion signed with that key obtains; without credentials, or with
// another key, every request fails, and no error shows a key.
func TestGCSStoreWithServiceAccountKey(t *testing.T) {
	g, err := emulators.StartGCS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	bucket := g.CreateBucket("")
	var log outputLog

	secret := map[string][]byte{}
	for k, v := range g.SecretData() {
		secret[k] = []byte(v)
	}
	creds, err := artifact.CredentialsFromSecret("gcs-key", "gs", secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := deadline(t)
	s, err := artifact.OpenStore(ctx, g.URL(bucket, "seeds/etcd-main"), artifact.Options{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exerciseStore(t, s, &log)
	if g.Tokens.Load() == 0 {
		t.Fatal("the store reached the emulator without an access token from the key")
	}

	// Anonymous: refused by the gate.
	refused := g.Refused.Load()
	anon, err := artifact.OpenStore(ctx, g.URL(bucket, "seeds/etcd-main")+"&anonymous=true", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.ReadManifest(ctx, "g1"); err == nil || g.Refused.Load() == refused {
		t.Fatalf("an anonymous read: %v (refused %d times), want refused", err, g.Refused.Load()-refused)
	} else {
		log.errf(err)
	}

	// Another key of the same service account: no token, so nothing.
	other := otherKey(t, g.KeyJSON)
	bad, err := artifact.OpenStore(ctx, g.URL(bucket, "seeds/etcd-main"), artifact.Options{Credentials: &artifact.Credentials{GoogleCredentialsJSON: other}})
	if err == nil {
		defer bad.Close()
		_, err = bad.ReadManifest(ctx, "g1")
	}
	if err == nil {
		t.Fatal("a key the token endpoint does not know was accepted")
	}
	t.Logf("with another key: %v", err)
	log.errf(err)
	log.add(fmt.Sprintf("%v %+v %#v %s", creds, creds, creds, s))
	log.assertNoSecrets(t, append(g.Secrets(), keySecrets(t, other)...))

	// An s3 Secret for a gs:// store: refused, naming what gs:// wants.
	if _, err := artifact.OpenStore(ctx, g.URL(bucket, "x"), artifact.Options{Credentials: &artifact.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}}); !errors.Is(err, artifact.ErrInvalidStore) ||
		!strings.Contains(err.Error(), artifact.SecretKeyGoogleCredentialsJSON) {
		t.Errorf("s3 credentials for a gs:// store: %v", err)
	}
	for _, u := range []string{"?endpoint=ftp://127.0.0.1:1", "?endpoint=http://user:pw@127.0.0.1:1", "?endpoint=http://127.0.0.1:1/?x=1", "?access_id=x"} {
		if _, err := artifact.OpenStore(ctx, "gs://"+bucket+"/p"+u, artifact.Options{Credentials: creds}); !errors.Is(err, artifact.ErrInvalidStore) || strings.Contains(err.Error(), "pw") {
			t.Errorf("gs://%s/p%s: %v, want refused", bucket, u, err)
		}
	}
	if _, err := artifact.OpenStore(ctx, g.URL(bucket, "p")+"&anonymous=true", artifact.Options{Credentials: creds}); !errors.Is(err, artifact.ErrInvalidStore) {
		t.Errorf("anonymous with a Secret: %v, want refused", err)
	}
}

// otherKey is keyJSON with a fresh private key (same account, token_uri).
func otherKey(t *testing.T, keyJSON string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(keyJSON), &doc); err != nil {
		t.Fatal(err)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	doc["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	b, _ := json.Marshal(doc)
	return string(b)
}

// keySecrets are a key JSON's private key lines.
func keySecrets(t *testing.T, keyJSON string) []string {
	t.Helper()
	var doc struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal([]byte(keyJSON), &doc); err != nil {
		t.Fatal(err)
	}
	out := []string{keyJSON}
	for _, l := range strings.Split(doc.PrivateKey, "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

var (
	azuriteOnce sync.Once
	azurite     *emulators.Azurite
	azuriteErr  error
)

// stopAzurite stops the package's Azurite, if started (TestMain).
var stopAzurite = func() {}

// startAzurite starts the package's Azurite on first use.
func startAzurite(t *testing.T) *emulators.Azurite {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Azurite (hack/testbins.sh); skipped under -short")
	}
	azuriteOnce.Do(func() {
		bin, err := testbins.Dir()
		if err != nil {
			azuriteErr = err
			return
		}
		dir, err := os.MkdirTemp("", "hactl-azurite-")
		if err != nil {
			azuriteErr = err
			return
		}
		azurite, azuriteErr = emulators.StartAzurite(context.Background(), bin, dir)
		stopAzurite = func() {
			_ = azurite.Stop()
			os.RemoveAll(dir)
		}
	})
	if azuriteErr != nil {
		t.Fatal(azuriteErr)
	}
	return azurite
}

// TestAzureStoreWithSecret: an azblob:// store on Azurite (local-emulator
// URL parameters) makes the round trip with each kind of Secret: account
// and shared key, account and SAS token, connection string. A request
// without credentials, with another key, or with a SAS token of another
// container fails, and no error shows a credential.
func TestAzureStoreWithSecret(t *testing.T) {
	a := startAzurite(t)
	ctx := deadline(t)
	var log outputLog

	// Without credentials Azurite refuses (shared-key auth is enforced).
	resp, err := http.Get(a.ServiceURL() + "?comp=list")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an unauthenticated request: %s, want 403", resp.Status)
	}

	var secrets []string
	for _, tc := range []struct {
		name string
		data func(container string) map[string]string
		url  func(container string) string
	}{
		{"shared key", func(string) map[string]string { return a.SecretData() }, func(c string) string { return a.URL(c, "seeds/etcd-main") }},
		{"SAS token", func(c string) map[string]string {
			sas, err := a.SASToken(c)
			if err != nil {
				t.Fatal(err)
			}
			secrets = append(secrets, sas)
			return map[string]string{artifact.SecretKeyAzureAccount: a.Account, artifact.SecretKeyAzureSASToken: sas}
		}, func(c string) string { return a.URL(c, "seeds/etcd-main") }},
		{"connection string", func(string) map[string]string {
			return map[string]string{artifact.SecretKeyAzureConnectionString: a.ConnectionString()}
		}, func(c string) string { return "azblob://" + c + "/seeds/etcd-main" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.CreateContainer(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			data := map[string][]byte{}
			for k, v := range tc.data(c) {
				data[k] = []byte(v)
			}
			creds, err := artifact.CredentialsFromSecret("azure-creds", "azblob", data)
			if err != nil {
				t.Fatal(err)
			}
			s, err := artifact.OpenStore(ctx, tc.url(c), artifact.Options{Credentials: creds})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			exerciseStore(t, s, &log)
			log.add(fmt.Sprintf("%v %+v %#v %s", creds, creds, creds, s))
			var b bytes.Buffer
			slog.New(slog.NewJSONHandler(&b, nil)).Info("x", "creds", creds)
			log.add(b.String())
		})
	}

	c, err := a.CreateContainer(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	wrongKey := base64.StdEncoding.EncodeToString(randBytes(t, 64))
	otherSAS, err := a.SASToken("some-other-container")
	if err != nil {
		t.Fatal(err)
	}
	for name, cr := range map[string]*artifact.Credentials{
		"another key":                     {AzureAccount: a.Account, AzureKey: wrongKey},
		"another container's SAS":         {AzureAccount: a.Account, AzureSASToken: otherSAS},
		"a connection string's wrong key": {AzureConnectionString: strings.Replace(a.ConnectionString(), a.Key, wrongKey, 1)},
	} {
		u := a.URL(c, "p")
		if cr.AzureConnectionString != "" {
			u = "azblob://" + c + "/p"
		}
		s, err := artifact.OpenStore(ctx, u, artifact.Options{Credentials: cr})
		if err == nil {
			_, err = s.List(ctx)
			s.Close()
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		t.Logf("%s: %v", name, err)
		log.errf(err)
	}
	log.assertNoSecrets(t, append(append(a.Secrets(), secrets...), wrongKey, otherSAS, a.ConnectionString()))

	// Refusals: credentials for another scheme, a connection string with
	// emulator parameters, an account other than the credentials'.
	for u, cr := range map[string]*artifact.Credentials{
		a.URL(c, "p"):                                    {GoogleCredentialsJSON: `{"type":"service_account"}`},
		a.URL(c, "p") + "&x=1":                           a.Credentials(),
		a.URL(c, "p") + "&storage_account=other":         a.Credentials(),
		"azblob://" + c + "/p?localemu=true":             {AzureConnectionString: a.ConnectionString()},
		"azblob://" + c + "/p?protocol=http&localemu=no": a.Credentials(),
	} {
		if _, err := artifact.OpenStore(ctx, u, artifact.Options{Credentials: cr}); !errors.Is(err, artifact.ErrInvalidStore) {
			t.Errorf("OpenStore(%s): %v, want ErrInvalidStore", u, err)
		} else if strings.Contains(err.Error(), a.Key) {
			t.Errorf("OpenStore(%s): the error shows the key", u)
		}
	}
}

// TestCredentialsFromSecretPerScheme: each scheme reads its own keys;
// a missing key, a Secret for another scheme, or keys of several schemes
// without a store URL are refused with errors that name keys, never
// values; every field is redacted in every format.
func TestCredentialsFromSecretPerScheme(t *testing.T) {
	const v = "sekrit-value-0123456789"
	key := `{"type":"service_account","private_key":"` + v + `"}`
	for _, tc := range []struct {
		name, scheme string
		data         map[string]string
		want         string // error substring; "" for success
		check        func(*artifact.Credentials) bool
	}{
		{"s3", "s3", map[string]string{"AWS_ACCESS_KEY_ID": "a" + v, "AWS_SECRET_ACCESS_KEY": v}, "", func(c *artifact.Credentials) bool { return c.SecretAccessKey == v }},
		{"s3 inferred", "", map[string]string{"AWS_ACCESS_KEY_ID": "a" + v, "AWS_SECRET_ACCESS_KEY": v, "AWS_REGION": "x"}, "", func(c *artifact.Credentials) bool { return c.AccessKeyID == "a"+v }},
		{"s3 half", "s3", map[string]string{"AWS_ACCESS_KEY_ID": v}, "no AWS_SECRET_ACCESS_KEY", nil},
		{"gs", "gs", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS_JSON": key}, "", func(c *artifact.Credentials) bool { return c.GoogleCredentialsJSON == key }},
		{"gs inferred", "", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS_JSON": key}, "", func(c *artifact.Credentials) bool { return c.GoogleCredentialsJSON == key }},
		{"gs not JSON", "gs", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS_JSON": v}, "not a JSON object", nil},
		{"gs no type", "gs", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS_JSON": `{"private_key":"` + v + `"}`}, `no "type"`, nil},
		{"gs with an s3 Secret", "gs", map[string]string{"AWS_ACCESS_KEY_ID": v, "AWS_SECRET_ACCESS_KEY": v}, "a gs:// store needs GOOGLE_APPLICATION_CREDENTIALS_JSON", nil},
		{"s3 with a gs Secret", "s3", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS_JSON": key}, "GOOGLE_APPLICATION_CREDENTIALS_JSON (gs://), credentials for another kind of store; a s3:// store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", nil},
		{"azblob with an s3 Secret", "azblob", map[string]string{"AWS_ACCESS_KEY_ID": v}, "AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING", nil},
		{"azblob key", "azblob", map[string]string{"AZURE_STORAGE_ACCOUNT": "acct", "AZURE_STORAGE_KEY": v}, "", func(c *artifact.Credentials) bool { return c.AzureKey == v && c.AzureAccount == "acct" }},
		{"azblob SAS", "azblob", map[string]string{"AZURE_STORAGE_ACCOUNT": "acct", "AZURE_STORAGE_SAS_TOKEN": "sv=1&sig=" + v}, "", func(c *artifact.Credentials) bool { return c.AzureSASToken == "sv=1&sig="+v }},
		{"azblob connection string", "", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "AccountName=a;AccountKey=" + v}, "", func(c *artifact.Credentials) bool { return strings.Contains(c.AzureConnectionString, v) }},
		{"azblob key without account", "azblob", map[string]string{"AZURE_STORAGE_KEY": v}, "has AZURE_STORAGE_KEY but no AZURE_STORAGE_ACCOUNT", nil},
		{"azblob account alone", "azblob", map[string]string{"AZURE_STORAGE_ACCOUNT": "acct"}, "neither AZURE_STORAGE_KEY nor AZURE_STORAGE_SAS_TOKEN", nil},
		{"empty", "", map[string]string{"other": v}, "holds no store credentials", nil},
		{"empty for s3", "s3", map[string]string{"other": v}, "holds none of AWS_ACCESS_KEY_ID", nil},
		{"two schemes, no URL", "", map[string]string{"AWS_ACCESS_KEY_ID": v, "AZURE_STORAGE_KEY": v}, "s3:// and azblob://", nil},
		{"two schemes, gs URL", "gs", map[string]string{"AWS_ACCESS_KEY_ID": v, "GOOGLE_APPLICATION_CREDENTIALS_JSON": key}, "", func(c *artifact.Credentials) bool { return c.AccessKeyID == "" && c.GoogleCredentialsJSON == key }},
		{"file", "file", map[string]string{"AWS_ACCESS_KEY_ID": v}, "takes no credentials", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, x := range tc.data {
				data[k] = []byte(x)
			}
			c, err := artifact.CredentialsFromSecret("store-creds", tc.scheme, data)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"store-creds"`) {
					t.Fatalf("error %v, want one naming the Secret and %q", err, tc.want)
				}
				if strings.Contains(err.Error(), v) {
					t.Fatalf("the error shows a value: %v", err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("%v, %v", c != nil, err)
			}
			var b strings.Builder
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
				fmt.Fprintf(&b, verb+"\n", c)
				fmt.Fprintf(&b, verb+"\n", *c)
			}
			j, _ := json.Marshal(struct{ C *artifact.Credentials }{c})
			b.Write(j)
			slog.New(slog.NewTextHandler(&b, nil)).Info("x", "creds", c)
			if strings.Contains(b.String(), v) {
				t.Fatalf("a credential is printed:\n%s", b.String())
			}
		})
	}
}

// TestCredentialsFromEnv: the agent's environment gives gs:// and
// azblob:// stores their credentials under the Secret's key names; s3://
// leaves them to the AWS SDK; nothing set means the SDK's defaults.
func TestCredentialsFromEnv(t *testing.T) {
	env := map[string]string{
		"GOOGLE_APPLICATION_CREDENTIALS_JSON": `{"type":"service_account"}`,
		"AZURE_STORAGE_ACCOUNT":               "acct", "AZURE_STORAGE_KEY": "a2V5",
		"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
	}
	getenv := func(k string) string { return env[k] }
	if c, err := artifact.CredentialsFromEnv("gs", getenv); err != nil || c == nil || c.GoogleCredentialsJSON == "" || c.AzureKey != "" {
		t.Errorf("gs: %v", err)
	}
	if c, err := artifact.CredentialsFromEnv("azblob", getenv); err != nil || c == nil || c.AzureKey != "a2V5" || c.GoogleCredentialsJSON != "" {
		t.Errorf("azblob: %v", err)
	}
	if c, err := artifact.CredentialsFromEnv("s3", getenv); err != nil || c != nil {
		t.Errorf("s3: %v %v, want nil (the AWS SDK reads them)", c != nil, err)
	}
	none := func(string) string { return "" }
	for _, s := range []string{"gs", "azblob", "file"} {
		if c, err := artifact.CredentialsFromEnv(s, none); err != nil || c != nil {
			t.Errorf("%s without variables: %v %v, want nil", s, c != nil, err)
		}
	}
	if _, err := artifact.CredentialsFromEnv("azblob", func(k string) string {
		return map[string]string{"AZURE_STORAGE_KEY": "a2V5"}[k]
	}); err == nil || !strings.Contains(err.Error(), "the environment has AZURE_STORAGE_KEY but no AZURE_STORAGE_ACCOUNT") {
		t.Errorf("a key without an account: %v", err)
	}
	// An account alone is workload or managed identity: no credentials,
	// the SDK's default chain signs.
	if c, err := artifact.CredentialsFromEnv("azblob", func(k string) string {
		return map[string]string{"AZURE_STORAGE_ACCOUNT": "acct"}[k]
	}); err != nil || c != nil {
		t.Errorf("an account alone: %v %v, want nil (the SDK's defaults)", c != nil, err)
	}
}

// An azblob:// store opened without a Secret takes a SAS token from the
// environment through gocloud's default opener; when the server cannot be
// reached, the error (Go's url.Error quotes the request URL, the
// signature in it) still shows no part of the token.
func TestAzureEnvSASNotInErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there
	sig := "c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ%3D%3D"
	t.Setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", "sv=2021-08-06&ss=b&srt=sco&sp=rl&se=2099-01-01T00:00:00Z&sig="+sig)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := artifact.OpenStore(ctx, "azblob://c/p?localemu=true&protocol=http&domain="+addr, artifact.Options{})
	if err == nil {
		defer s.Close()
		_, err = s.List(ctx)
	}
	if err == nil {
		t.Fatal("listing a store nobody serves succeeded")
	}
	for _, part := range []string{sig, "c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ"} {
		if strings.Contains(err.Error(), part) {
			t.Fatalf("the error shows the SAS signature: %v", err)
		}
	}
	t.Logf("error as shown: %v", err)
}

// TestCredentialSecretsScrubbed: a Store scrubs every secret value of
// every scheme from errors, and the secret parts of compound ones (a JSON
// key's private key, as written and as JSON escapes it, and its lines; a
// SAS token's signature, encoded or not; a connection string's account
// key and signature), but not the account name.
func TestCredentialSecretsScrubbed(t *testing.T) {
	pemKey := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"
	keyJSON, _ := json.Marshal(map[string]string{"type": "service_account", "private_key": pemKey, "private_key_id": "kid-0123456789"})
	c := &artifact.Credentials{
		AccessKeyID: "AKID0123", SecretAccessKey: "s3-secret", SessionToken: "s3-session",
		GoogleCredentialsJSON: string(keyJSON),
		AzureAccount:          "acct", AzureKey: "azure-key==",
		AzureSASToken:         "?sv=2024&sp=rl&sig=ab%2Bcd%3D",
		AzureConnectionString: "AccountName=acct;AccountKey=cs-key==;SharedAccessSignature=sv=1&sig=cs-sig",
	}
	got := strings.Join(artifact.CredentialSecrets(c), "\n")
	for _, want := range []string{"AKID0123", "s3-secret", "s3-session", string(keyJSON), strings.TrimSpace(pemKey), strings.ReplaceAll(pemKey, "\n", `\n`),
		"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "kid-0123456789", "azure-key==", "sv=2024&sp=rl&sig=ab%2Bcd%3D", "ab%2Bcd%3D", "ab+cd=",
		c.AzureConnectionString, "cs-key==", "cs-sig"} {
		if !strings.Contains("\n"+got+"\n", "\n"+want+"\n") {
			t.Errorf("%q is not scrubbed", want)
		}
	}
	if strings.Contains("\n"+got+"\n", "\nacct\n") {
		t.Error("the account name is scrubbed: errors would be unreadable")
	}
}
