package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob:// stores
	_ "gocloud.dev/blob/fileblob"  // file:// stores
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
	"gocloud.dev/gcp"
)

// Credentials are object-store credentials read from a Secret reference.
// They are never printed: every formatting path (fmt verbs, JSON, slog)
// yields "[redacted]", and a Store scrubs their values from every error it
// returns. Only s3:// stores take them; gs:// and azblob:// stores use
// their SDK's default chain (environment, workload identity).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

const redacted = "[redacted]"

// String implements fmt.Stringer.
func (Credentials) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v).
func (Credentials) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb prints "[redacted]".
func (Credentials) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON keeps the values out of JSON output.
func (Credentials) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// LogValue keeps the values out of structured logs.
func (Credentials) LogValue() slog.Value { return slog.StringValue(redacted) }

func (c *Credentials) secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range []string{c.AccessKeyID, c.SecretAccessKey, c.SessionToken} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Secret keys read by CredentialsFromSecret.
const (
	SecretKeyAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretKeySecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	SecretKeySessionToken    = "AWS_SESSION_TOKEN"
)

// CredentialsFromSecret builds Credentials from a Secret's data (the
// caller reads the Secret). It needs AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY; AWS_SESSION_TOKEN is optional. Errors name the
// missing key, never a value.
func CredentialsFromSecret(name string, data map[string][]byte) (*Credentials, error) {
	c := &Credentials{
		AccessKeyID:     strings.TrimSpace(string(data[SecretKeyAccessKeyID])),
		SecretAccessKey: strings.TrimSpace(string(data[SecretKeySecretAccessKey])),
		SessionToken:    strings.TrimSpace(string(data[SecretKeySessionToken])),
	}
	var missing []string
	if c.AccessKeyID == "" {
		missing = append(missing, SecretKeyAccessKeyID)
	}
	if c.SecretAccessKey == "" {
		missing = append(missing, SecretKeySecretAccessKey)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("secret %q has no %s", name, strings.Join(missing, " or "))
	}
	return c, nil
}

// Options configure OpenStore.
type Options struct {
	// Credentials, when set, are used instead of the environment
	// (s3:// only).
	Credentials *Credentials
	// CreateDir creates a missing file:// directory (writers set it;
	// readers report a missing directory instead).
	CreateDir bool
}

// Store is a place where generations are kept: a gocloud.dev bucket and a
// key prefix. It is safe for concurrent use.
type Store struct {
	bucket  *blob.Bucket
	display string
	secrets []string
}

// Supported store URL schemes.
var schemes = []string{"s3", "gs", "azblob", "file"}

// OpenStore opens the store at rawURL:
//
//	s3://bucket/prefix?endpoint=http://host:port&use_path_style=true&region=us-east-1
//	gs://bucket/prefix
//	azblob://container/prefix
//	file:///absolute/dir
//
// The path of an s3, gs or azblob URL is the key prefix under which
// generations live; the other query parameters are gocloud.dev's. A
// file:// directory must exist unless o.CreateDir. Credentials come from o or,
// when nil, from the environment.
func OpenStore(ctx context.Context, rawURL string, o Options) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot parse %s", ErrInvalidStore, RedactURL(rawURL))
	}
	s := &Store{display: RedactURL(rawURL), secrets: o.Credentials.secrets()}
	if u.User != nil {
		return nil, fmt.Errorf("%w: %s carries user information; give credentials through the environment or --store-secret", ErrInvalidStore, s.display)
	}
	var b *blob.Bucket
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%w: %s: a file:// URL has no host (file:///absolute/dir)", ErrInvalidStore, s.display)
		}
		if !path.IsAbs(u.Path) {
			return nil, fmt.Errorf("%w: %s: a file:// store needs an absolute directory", ErrInvalidStore, s.display)
		}
		if o.Credentials != nil {
			return nil, fmt.Errorf("%w: %s: a file:// store takes no credentials", ErrInvalidStore, s.display)
		}
		q := u.Query()
		if o.CreateDir && q.Get("create_dir") == "" {
			q.Set("create_dir", "true")
			u.RawQuery = q.Encode()
		}
		b, err = blob.OpenBucket(ctx, u.String())
	case "s3", "gs", "azblob":
		if u.Host == "" {
			return nil, fmt.Errorf("%w: %s names no bucket", ErrInvalidStore, s.display)
		}
		prefix, perr := cleanPrefix(u.Path)
		if perr != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidStore, s.display, perr)
		}
		u.Path, u.RawPath = "", ""
		switch {
		case o.Credentials != nil && u.Scheme == "s3":
			b, err = openS3(ctx, u, o.Credentials)
		case o.Credentials != nil:
			return nil, fmt.Errorf("%w: %s: a Secret reference is supported for s3:// stores only; %s:// stores use their SDK's default credentials (environment or workload identity)", ErrInvalidStore, s.display, u.Scheme)
		case u.Scheme == "gs":
			b, err = openGCS(ctx, u)
		default:
			b, err = blob.OpenBucket(ctx, u.String())
		}
		if err == nil && prefix != "" {
			b = blob.PrefixedBucket(b, prefix)
		}
	default:
		return nil, fmt.Errorf("%w: %s: unsupported scheme %q (want one of %s)", ErrInvalidStore, s.display, u.Scheme, strings.Join(schemes, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrInvalidStore, s.display, s.scrub(err))
	}
	s.bucket = b
	return s, nil
}

// cleanPrefix turns a URL path into a key prefix ending in "/" ("" for
// none), refusing "." and ".." elements.
func cleanPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return "", fmt.Errorf("the prefix %q is not a clean path", p)
		}
	}
	return p + "/", nil
}

// openS3 opens an s3:// bucket with static credentials. The query
// parameters are those of gocloud.dev's s3blob URL opener.
func openS3(ctx context.Context, u *url.URL, c *Credentials) (*blob.Bucket, error) {
	q := u.Query()
	var opts []func(*s3.Options)
	var bo s3blob.Options
	for _, key := range []string{"use_path_style", "s3ForcePathStyle"} {
		if v := q.Get(key); v != "" {
			q.Del(key)
			on, err := parseBool(key, v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, func(o *s3.Options) { o.UsePathStyle = on })
		}
	}
	if v := q.Get("disable_https"); v != "" {
		q.Del("disable_https")
		on, err := parseBool("disable_https", v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = on })
	}
	if v := q.Get("accelerate"); v != "" {
		q.Del("accelerate")
		on, err := parseBool("accelerate", v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, func(o *s3.Options) { o.UseAccelerate = on })
	}
	if v := q.Get("ssetype"); v != "" {
		q.Del("ssetype")
		found := false
		for _, t := range bo.EncryptionType.Values() {
			if strings.EqualFold(string(t), v) {
				bo.EncryptionType, found = t, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%q is not a valid value for ssetype", v)
		}
	}
	if v := q.Get("kmskeyid"); v != "" {
		q.Del("kmskeyid")
		bo.KMSEncryptionID = v
	}
	if q.Get("anonymous") != "" || q.Get("profile") != "" || q.Get("role") != "" {
		return nil, errors.New("anonymous, profile and role cannot be combined with a Secret reference")
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, err
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	bo.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	return s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, opts...), u.Host, &bo)
}

// openGCS opens a gs:// bucket with Google's default credentials. (The
// default URL opener prints a warning to stdout when there are none;
// hactl's output may be JSON, so the error is returned instead.)
func openGCS(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	creds, err := gcp.DefaultCredentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS or use workload identity): %w", err)
	}
	client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), creds.TokenSource)
	if err != nil {
		return nil, err
	}
	o := &gcsblob.URLOpener{Client: client}
	return o.OpenBucketURL(ctx, u)
}

func parseBool(key, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "t", "true":
		return true, nil
	case "0", "f", "false":
		return false, nil
	}
	return false, fmt.Errorf("invalid value %q for %s", v, key)
}

// String is the store URL with anything secret-looking removed.
func (s *Store) String() string { return s.display }

// Close releases the store.
func (s *Store) Close() error {
	if s == nil || s.bucket == nil {
		return nil
	}
	return s.scrub(s.bucket.Close())
}

// sensitiveParam reports whether a URL query parameter may carry a secret.
func sensitiveParam(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"key", "secret", "token", "password", "passwd", "sig", "credential", "auth"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// RedactURL returns rawURL without user information and with the values
// of secret-looking query parameters (keys, secrets, tokens, signatures,
// passwords) replaced by "[redacted]". It is how a store is shown.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "[unparsable store URL]"
	}
	u.User = nil
	if u.Opaque != "" {
		// scheme:opaque holds anything, a credential included.
		return u.Scheme + ":" + redacted
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// A query that does not parse (a ';', a bad escape) could hide a
		// credential from the parameter check: show none of it.
		u.RawQuery = redacted
		return u.String()
	}
	changed := false
	for k := range q {
		if sensitiveParam(k) {
			q[k] = []string{redacted}
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// scrubbedError is an error whose message had credential values replaced.
// It never hands out the original error (whose message, or whose own
// wrapped errors, hold the values): Unwrap gives only a sentinel callers
// test for (a cancelled or expired context), nil otherwise.
type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.cause }

// scrub replaces credential values in err's message.
func (s *Store) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	for _, v := range s.secrets {
		out = strings.ReplaceAll(out, v, redacted)
	}
	if out == msg {
		return err
	}
	se := &scrubbedError{msg: out}
	for _, c := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, c) {
			se.cause = c
		}
	}
	return se
}

// isNotFound reports a missing object.
func isNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }
