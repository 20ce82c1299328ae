package emulators

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/hactl-dev/hactl/artifact"
)

// TokenPath is the path of the GCS emulator's OAuth2 token endpoint (the
// key's token_uri).
const TokenPath = "/oauth2/token"

// GCS is fake-gcs-server behind an OAuth2 gate, on one loopback listener:
// TokenPath hands out an access token for a JWT assertion signed with the
// private key of KeyJSON, and every other request needs
// "Authorization: Bearer <that token>" (401 otherwise).
type GCS struct {
	// Endpoint is http://127.0.0.1:PORT, the JSON API's base URL.
	Endpoint string
	// KeyJSON is a service account's JSON key (a fresh RSA key) whose
	// token_uri is Endpoint+TokenPath.
	KeyJSON string
	// ClientEmail is the key's service account.
	ClientEmail string

	// Tokens counts the access tokens handed out; Refused the requests
	// the gate refused (no or a wrong token) and the token requests
	// refused (a bad assertion).
	Tokens, Refused atomic.Int64

	key         *rsa.PrivateKey
	privatePEM  string
	accessToken string
	srv         *fakestorage.Server
	http        *http.Server
	wg          sync.WaitGroup
}

// StartGCS starts the gated fake-gcs-server on a free loopback port.
func StartGCS() (*GCS, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &GCS{Endpoint: "http://" + l.Addr().String(), ClientEmail: "hactl-seeds@hactl-test.iam.gserviceaccount.com"}
	if g.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		l.Close()
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(g.key)
	if err != nil {
		l.Close()
		return nil, err
	}
	g.privatePEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	key, _ := json.MarshalIndent(map[string]string{
		"type":           "service_account",
		"project_id":     "hactl-test",
		"private_key_id": randHex(20),
		"private_key":    g.privatePEM,
		"client_email":   g.ClientEmail,
		"client_id":      "100000000000000000001",
		"token_uri":      g.Endpoint + TokenPath,
	}, "", "  ")
	g.KeyJSON = string(key)
	g.accessToken = "ya29.hactl-" + randHex(24)
	g.srv, err = fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", ExternalURL: g.Endpoint, PublicHost: l.Addr().String(), Writer: io.Discard,
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TokenPath, g.token)
	api := g.srv.HTTPHandler()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+g.accessToken {
			g.Refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"code":401,"message":"Anonymous caller does not have storage.objects access (the emulator's gate wants the service account's access token)."}}`)
			return
		}
		api.ServeHTTP(w, r)
	})
	g.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		_ = g.http.Serve(l)
	}()
	return g, nil
}

// Stop stops the server.
func (g *GCS) Stop() {
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.http.Shutdown(ctx)
	g.wg.Wait()
	g.srv.Stop()
}

// CreateBucket creates a bucket (a random name when name is empty) and
// returns its name.
func (g *GCS) CreateBucket(name string) string {
	if name == "" {
		name = "hactl-" + randHex(6)
	}
	g.srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return name
}

// URL is the store URL of bucket/prefix on this emulator. It carries no
// credentials.
func (g *GCS) URL(bucket, prefix string) string {
	p := strings.Trim(prefix, "/")
	if p != "" {
		p = "/" + p
	}
	return "gs://" + bucket + p + "?endpoint=" + g.Endpoint
}

// Credentials are the service account's key as artifact.Credentials.
func (g *GCS) Credentials() *artifact.Credentials {
	return &artifact.Credentials{GoogleCredentialsJSON: g.KeyJSON}
}

// SecretData is the data of a store Secret holding the key.
func (g *GCS) SecretData() map[string]string {
	return map[string]string{artifact.SecretKeyGoogleCredentialsJSON: g.KeyJSON}
}

// Secrets are the values that must never appear in any output: the key
// JSON, its private key (and each line of its body, as PEM and as JSON
// escapes it) and the access token.
func (g *GCS) Secrets() []string {
	out := []string{g.KeyJSON, g.privatePEM, g.accessToken}
	for _, line := range strings.Split(g.privatePEM, "\n") {
		if line != "" && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

// token is the token endpoint: an RFC 7523 JWT bearer grant whose
// assertion must be signed (RS256) with the key's private key, issued by
// its service account for this endpoint, and not expired.
func (g *GCS) token(w http.ResponseWriter, r *http.Request) {
	if err := g.checkAssertion(r); err != nil {
		g.Refused.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": err.Error()})
		return
	}
	g.Tokens.Add(1)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": g.accessToken, "token_type": "Bearer", "expires_in": 3600})
}

func (g *GCS) checkAssertion(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	if gt := r.PostForm.Get("grant_type"); gt != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return fmt.Errorf("grant_type %q", gt)
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		return errors.New("the assertion is not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
	}
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return err
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch {
	case header.Alg != "RS256":
		return fmt.Errorf("alg %q", header.Alg)
	case rsa.VerifyPKCS1v15(&g.key.PublicKey, crypto.SHA256, sum[:], sig) != nil:
		return errors.New("the assertion's signature does not verify with the service account's key")
	case claims.Iss != g.ClientEmail:
		return fmt.Errorf("iss %q", claims.Iss)
	case claims.Aud != g.Endpoint+TokenPath:
		return fmt.Errorf("aud %q", claims.Aud)
	case !strings.Contains(claims.Scope, "devstorage"):
		return fmt.Errorf("scope %q", claims.Scope)
	case time.Unix(claims.Exp, 0).Before(time.Now()):
		return errors.New("expired")
	}
	return nil
}
