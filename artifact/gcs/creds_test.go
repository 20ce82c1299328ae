package gcs

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gocloud.dev/gcerrors"
	"golang.org/x/oauth2"
)

// serviceAccountJSON is a service-account key file for privateKey whose
// token endpoint is tokenURI.
func serviceAccountJSON(t *testing.T, privateKey, tokenURI string) []byte {
	t.Helper()
	js, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "hactl-test",
		"private_key_id": "5f3c0d9e2b7a41c6a8e1d4b2f0c9e7a63b1d5f80",
		"private_key":    privateKey,
		"client_email":   "hactl@hactl-test.iam.gserviceaccount.com",
		"client_id":      "123456789",
		"token_uri":      tokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// tokenServer is an OAuth2 token endpoint that grants token to any JWT
// bearer assertion.
func tokenServer(t *testing.T, token string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.FormValue("assertion") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	return ts, &hits
}

const bogusKeyBody = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDhactlSECRETKEYMATERIAL0123456789abcdef"

// TestBogusCredentialsNotLeaked checks that a service-account key whose
// private key does not parse fails with PermissionDenied, before any token
// request, and that no error carries the key material.
func TestBogusCredentialsNotLeaked(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	ts, hits := tokenServer(t, "unused")
	pemKey := "-----BEGIN PRIVATE KEY-----\n" + bogusKeyBody + "\n" + bogusKeyBody[:40] + "\n-----END PRIVATE KEY-----\n"
	js := serviceAccountJSON(t, pemKey, ts.URL)
	secrets := []string{bogusKeyBody, bogusKeyBody[:40], "5f3c0d9e2b7a41c6a8e1d4b2f0c9e7a63b1d5f80", "SECRETKEYMATERIAL"}
	noSecret := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error contains key material %q: %v", what, s, err)
			}
		}
	}

	b, err := OpenBucket(ctx, testBucket, Options{Endpoint: srv.URL(), CredentialsJSON: js})
	if err != nil {
		noSecret("OpenBucket", err)
	} else {
		defer b.Close()
		_, err := b.Attributes(ctx, "anything")
		noSecret("Attributes", err)
		if gcerrors.Code(err) != gcerrors.PermissionDenied {
			t.Errorf("Attributes: code %v, want PermissionDenied (%v)", gcerrors.Code(err), err)
		}
		noSecret("WriteAll", b.WriteAll(ctx, "k", []byte("v"), nil))
	}
	if hits.Load() != 0 {
		t.Errorf("%d token requests with an unparsable key", hits.Load())
	}

	// Broken JSON and credential types that are refused.
	truncated := js[:len(js)/2]
	for name, js := range map[string][]byte{
		"truncated":        truncated,
		"external_account": []byte(`{"type":"external_account","private_key":"` + bogusKeyBody + `","credential_source":{"executable":{"command":"/bin/true"}}}`),
		"no type":          []byte(`{"private_key":"` + bogusKeyBody + `"}`),
	} {
		_, err := OpenBucket(ctx, testBucket, Options{Endpoint: srv.URL(), CredentialsJSON: js})
		noSecret(name, err)
	}
}

// TestServiceAccountToken checks the whole OAuth2 path with a real RSA key:
// the token is fetched once from token_uri through Options.HTTPClient and
// sent as a Bearer token on every request; errors do not contain it.
func TestServiceAccountToken(t *testing.T) {
	ctx := context.Background()
	srv := newFakeGCS(t)
	const token = "ya29.hactl-test-ACCESS-TOKEN"
	ts, hits := tokenServer(t, token)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	rec := &authRecorder{}
	b, err := OpenBucket(ctx, testBucket, Options{
		Endpoint:        srv.URL(),
		CredentialsJSON: serviceAccountJSON(t, pemKey, ts.URL),
		HTTPClient:      &http.Client{Transport: rec},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "authed", []byte("data"), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadAll(ctx, "authed"); err != nil || string(got) != "data" {
		t.Fatalf("ReadAll: %q, %v", got, err)
	}
	_, err = b.Attributes(ctx, "missing")
	if gcerrors.Code(err) != gcerrors.NotFound || strings.Contains(err.Error(), token) {
		t.Errorf("Attributes of a missing object: %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d token requests, want 1", hits.Load())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.storage) < 3 || len(rec.token) != 1 {
		t.Fatalf("%d storage and %d token requests went through HTTPClient", len(rec.storage), len(rec.token))
	}
	for _, h := range rec.storage {
		if h != "Bearer "+token {
			t.Errorf("a storage request had Authorization %q", h)
		}
	}
	if rec.token[0] != "" {
		t.Errorf("the token request had Authorization %q", rec.token[0])
	}
}

// authRecorder records the Authorization header of each request.
type authRecorder struct {
	mu             sync.Mutex
	storage, token []string
}

func (a *authRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	if strings.Contains(req.URL.Path, "/storage/v1/") {
		a.storage = append(a.storage, req.Header.Get("Authorization"))
	} else {
		a.token = append(a.token, req.Header.Get("Authorization"))
	}
	a.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// TestTokenErrorRedacted checks that a token failure quoting the key (as a
// misbehaving token endpoint might) is scrubbed.
func TestTokenErrorRedacted(t *testing.T) {
	js := serviceAccountJSON(t, "-----BEGIN PRIVATE KEY-----\n"+bogusKeyBody+"\n-----END PRIVATE KEY-----\n", "http://127.0.0.1:1/token")
	src := tokenSource{src: failingSource{errors.New("oauth2: cannot fetch token: 400\nResponse: key " + bogusKeyBody + " id 5f3c0d9e2b7a41c6a8e1d4b2f0c9e7a63b1d5f80")}, secrets: secretsIn(js)}
	_, err := src.Token()
	var ae *authError
	if !errors.As(err, &ae) {
		t.Fatalf("Token error %T, want *authError", err)
	}
	if strings.Contains(err.Error(), bogusKeyBody) || strings.Contains(err.Error(), "5f3c0d9e2b7a") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("not redacted: %v", err)
	}
}

type failingSource struct{ err error }

func (f failingSource) Token() (*oauth2.Token, error) { return nil, f.err }
