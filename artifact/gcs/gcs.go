// Package gcs is a small gocloud.dev/blob driver for Google Cloud Storage
// (gs:// stores). It speaks the GCS JSON API with net/http and
// golang.org/x/oauth2 instead of cloud.google.com/go/storage, whose
// dependencies (gRPC xDS, OpenTelemetry exporters, Arrow, ...) would more
// than double the size of the plugin binary.
//
// It implements what the artifact store needs: List (prefix, delimiter,
// paging), ranged reads, streaming uploads (with metadata, Content-MD5 and
// the IfNotExist precondition), Attributes, Delete and Copy (via the rewrite
// API). SignedURL reports gcerrors.Unimplemented and As/ErrorAs expose no
// driver-specific types.
//
// Object keys are escaped like gocloud.dev/blob/gcsblob escapes them (CR, LF
// and the "/" of "../" become "__0x<hex>__"), so objects written through
// gcsblob keep their keys. The one difference: any "__0x" in a key has its
// first "_" escaped, where gcsblob escapes it only when it starts a complete
// escape sequence.
//
// Uploads stream the bytes in a single multipart request; the object is
// committed only when the request completes, which happens in Close. If the
// writer's context is cancelled before Close, the request is abandoned
// before its end is sent, so no object is created or replaced.
package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

const (
	defaultEndpoint = "https://storage.googleapis.com"
	scope           = "https://www.googleapis.com/auth/devstorage.read_write"
	// defaultPageSize is the listing page size when the caller sets none
	// (the JSON API's maximum).
	defaultPageSize = 1000
	// maxAttempts bounds the tries of a GET that fails with 429, 5xx or a
	// transport error; retryDelay is the first back-off, doubled each time.
	maxAttempts = 4
	retryDelay  = 250 * time.Millisecond
)

// Options configures OpenBucket.
type Options struct {
	// Endpoint is the JSON API's base URL: "" means https://storage.googleapis.com;
	// an emulator such as fake-gcs-server is e.g. http://127.0.0.1:4443.
	Endpoint string
	// CredentialsJSON is a Google service-account (or authorized-user) JSON key.
	// nil: Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS, workload identity, metadata server).
	CredentialsJSON []byte
	// Anonymous sends no Authorization header (emulators, public buckets).
	Anonymous bool
	// HTTPClient is the base client (its Transport is wrapped for auth); nil: http.DefaultClient's transport.
	HTTPClient *http.Client
}

// OpenBucket returns a *blob.Bucket (gocloud.dev/blob) for bucket, backed by this driver.
func OpenBucket(ctx context.Context, bucket string, o Options) (*blob.Bucket, error) {
	drv, err := openDriver(ctx, bucket, o)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(drv), nil
}

// openDriver builds the driver.Bucket behind OpenBucket.
func openDriver(ctx context.Context, name string, o Options) (*bucket, error) {
	if name == "" {
		return nil, errors.New("gcs: no bucket name")
	}
	endpoint := strings.TrimRight(o.Endpoint, "/")
	if endpoint == "" {
		endpoint = defaultEndpoint
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gcs: the endpoint %q is not an http(s) URL", o.Endpoint)
	}
	client, err := newHTTPClient(ctx, o)
	if err != nil {
		return nil, err
	}
	return &bucket{name: name, endpoint: endpoint, client: client, pageSize: defaultPageSize, retryDelay: retryDelay}, nil
}

// newHTTPClient returns the base client, its transport wrapped to add an
// OAuth2 access token unless o.Anonymous.
func newHTTPClient(ctx context.Context, o Options) (*http.Client, error) {
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{Transport: http.DefaultClient.Transport}
	}
	if o.Anonymous {
		if o.CredentialsJSON != nil {
			return nil, errors.New("gcs: Anonymous and CredentialsJSON are mutually exclusive")
		}
		return base, nil
	}
	// Token requests go through the base client; they must outlive ctx.
	ctx = context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, base)
	var (
		creds   *google.Credentials
		secrets []string
		err     error
	)
	if o.CredentialsJSON != nil {
		secrets = secretsIn(o.CredentialsJSON)
		creds, err = credentialsFromJSON(ctx, o.CredentialsJSON)
	} else {
		creds, err = google.FindDefaultCredentials(ctx, scope)
	}
	if err != nil {
		return nil, fmt.Errorf("gcs: loading Google credentials: %s", redact(err.Error(), secrets))
	}
	c := *base
	c.Transport = &oauth2.Transport{
		Source: tokenSource{src: creds.TokenSource, secrets: secrets},
		Base:   base.Transport,
	}
	return &c, nil
}

// credentialsFromJSON accepts only key types that cannot make the process
// run commands or read files (unlike external_account configurations).
func credentialsFromJSON(ctx context.Context, js []byte) (*google.Credentials, error) {
	var f struct {
		Type google.CredentialsType `json:"type"`
	}
	if err := json.Unmarshal(js, &f); err != nil {
		return nil, errors.New("the credentials are not valid JSON")
	}
	switch f.Type {
	case google.ServiceAccount, google.AuthorizedUser:
		return google.CredentialsFromJSONWithType(ctx, js, f.Type, scope)
	}
	return nil, fmt.Errorf("unsupported credentials type %.40q (want %q or %q)", f.Type, google.ServiceAccount, google.AuthorizedUser)
}

// secretsIn lists the secret values of a credentials JSON: they are scrubbed
// from every error message. Each line of the private key is listed too, in
// case an error quotes a fragment of it.
func secretsIn(js []byte) []string {
	var m map[string]any
	_ = json.Unmarshal(js, &m)
	var out []string
	for _, k := range []string{"private_key", "private_key_id", "client_secret", "refresh_token"} {
		s, _ := m[k].(string)
		if s == "" {
			continue
		}
		out = append(out, s)
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 8 && !strings.HasPrefix(line, "-----") {
				out = append(out, line)
			}
		}
	}
	return out
}

func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// tokenSource marks token failures as authError and scrubs them.
type tokenSource struct {
	src     oauth2.TokenSource
	secrets []string
}

func (t tokenSource) Token() (*oauth2.Token, error) {
	tok, err := t.src.Token()
	if err != nil {
		return nil, &authError{msg: redact(err.Error(), t.secrets)}
	}
	return tok, nil
}

// authError is a failure to obtain an access token.
type authError struct{ msg string }

func (e *authError) Error() string { return "getting a Google access token: " + e.msg }

// apiError is a failed request: an HTTP error status or, with status 0, a
// transport failure (err). It names the bucket and key, never the URL.
type apiError struct {
	op, bucket, key string
	status          int
	msg             string
	err             error
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("gcs: %s gs://%s/%s: ", e.op, e.bucket, e.key)
	if e.status == 0 {
		return s + e.err.Error()
	}
	return s + fmt.Sprintf("HTTP %d: %s", e.status, e.msg)
}

func (e *apiError) Unwrap() error { return e.err }

var (
	errUnimplemented = errors.New("gcs: not implemented by this driver")
	errEmptyKey      = errors.New("gcs: the object key is empty")
)

// errorCode implements driver.Bucket.ErrorCode.
func errorCode(err error) gcerrors.ErrorCode {
	var ae *apiError
	var auth *authError
	switch {
	case errors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	case errors.Is(err, errUnimplemented):
		return gcerrors.Unimplemented
	case errors.Is(err, errEmptyKey):
		return gcerrors.InvalidArgument
	case errors.As(err, &auth):
		return gcerrors.PermissionDenied
	case !errors.As(err, &ae) || ae.status == 0:
		return gcerrors.Unknown
	}
	switch s := ae.status; {
	case s == http.StatusNotFound:
		return gcerrors.NotFound
	case s == http.StatusPreconditionFailed:
		return gcerrors.FailedPrecondition
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return gcerrors.PermissionDenied
	case s == http.StatusBadRequest || s == http.StatusRequestedRangeNotSatisfiable:
		return gcerrors.InvalidArgument
	case s == http.StatusConflict:
		return gcerrors.AlreadyExists
	case s == http.StatusTooManyRequests:
		return gcerrors.ResourceExhausted
	case s == http.StatusNotImplemented:
		return gcerrors.Unimplemented
	case s >= 500:
		return gcerrors.Internal
	}
	return gcerrors.Unknown
}

func hasStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == status
}

// do sends req. A non-2xx answer becomes an *apiError (the body is read
// for its message and closed); so does a transport failure, without the
// URL that *url.Error would print.
func (b *bucket) do(req *http.Request, op, key string) (*http.Response, error) {
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &apiError{op: op, bucket: b.name, key: key, err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := http.StatusText(resp.StatusCode)
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return nil, &apiError{op: op, bucket: b.name, key: key, status: resp.StatusCode, msg: msg}
}

// get sends a GET, retrying with back-off on 429, 5xx and transport
// failures (GETs are idempotent).
func (b *bucket) get(ctx context.Context, u string, header http.Header, op, key string) (*http.Response, error) {
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(b.retryDelay << (attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, &apiError{op: op, bucket: b.name, key: key, err: ctx.Err()}
			case <-t.C:
			}
		}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if rerr != nil {
			return nil, rerr
		}
		for k, v := range header {
			req.Header[k] = v
		}
		var resp *http.Response
		resp, err = b.do(req, op, key)
		if err == nil || !retryable(ctx, err) {
			return resp, err
		}
	}
	return nil, err
}

func retryable(ctx context.Context, err error) bool {
	var ae *apiError
	var auth *authError
	if ctx.Err() != nil || errors.As(err, &auth) || !errors.As(err, &ae) {
		return false
	}
	return ae.status == 0 || ae.status == http.StatusTooManyRequests || ae.status >= 500
}

// getJSON GETs u and decodes the JSON answer into v.
func (b *bucket) getJSON(ctx context.Context, u, op, key string, v any) error {
	resp, err := b.get(ctx, u, nil, op, key)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return &apiError{op: op, bucket: b.name, key: key, err: fmt.Errorf("decoding the answer: %w", err)}
	}
	return nil
}
