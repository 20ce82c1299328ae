package artifact

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// stores
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Options configure OpenStore.
type Options struct {
	// Credentials, when set, are used instead of the environment; they
	// must be for the URL's scheme (CredentialsFromSecret).
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
//	gs://bucket/prefix[?endpoint=http://host:port][&anonymous=true]
//	azblob://container/prefix[?localemu=true&protocol=http&domain=127.0.0.1:10000]
//	file:///absolute/dir
//
// The path of an s3, gs or azblob URL is the key prefix under which
// generations live. The query parameters of s3:// and azblob:// are
// gocloud.dev's (azblob: domain, protocol, cdn, localemu,
// storage_account); gs:// takes endpoint (an http(s) URL, such as an
// emulator's) and anonymous. A file:// directory must exist unless
// o.CreateDir. Credentials come from o or, when nil, from the SDK's
// defaults (environment, workload identity).
func OpenStore(ctx context.Context, rawURL string, o Options) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot parse %s", ErrInvalidStore, RedactURL(rawURL))
	}
	s := &Store{display: RedactURL(rawURL), secrets: o.Credentials.secrets()}
	if o.Credentials == nil {
		// The SDK's defaults may read a SAS token or a connection string
		// from the environment; an error quoting a request URL must not
		// show them either.
		if env, _ := CredentialsFromEnv(StoreScheme(rawURL), os.Getenv); env != nil {
			s.secrets = env.secrets()
		}
	}
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
		if o.Credentials != nil {
			if cerr := o.Credentials.forScheme(u.Scheme); cerr != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInvalidStore, s.display, cerr)
			}
		}
		u.Path, u.RawPath = "", ""
		switch {
		case u.Scheme == "gs":
			b, err = openGCS(ctx, u, o.Credentials)
		case u.Scheme == "azblob":
			b, err = openAzure(ctx, u, o.Credentials)
		case o.Credentials != nil:
			b, err = openS3(ctx, u, o.Credentials)
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

func parseBool(key, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "t", "true":
		return true, nil
	case "0", "f", "false":
		return false, nil
	}
	return false, fmt.Errorf("invalid value %q for %s", v, key)
}

// tuneS3Upload is the BeforeWrite of every upload: on an S3 store it
// replaces the transfer manager gocloud.dev made for the write with one of
// the same part size, concurrency and checksum setting whose multipart
// threshold is one part (the default is 16 MiB). The transfer manager
// reads up to the threshold into one growing buffer before it decides
// between one PUT and a multipart upload, and keeps that buffer while the
// rest of the stream fills its pool of parts: with the default, a
// capture's first 16 MiB (and the copies of its growth) sat beside the
// UploadConcurrency+1 parts. Other stores, and a bucket that is not
// gocloud's S3 one, are left as they are.
func (s *Store) tuneS3Upload(as func(any) bool) error {
	var tm *transfermanager.Client
	if !as(&tm) || tm == nil {
		return nil
	}
	var c *s3.Client
	if !s.bucket.As(&c) || c == nil {
		return nil
	}
	calc := c.Options().RequestChecksumCalculation
	*tm = *transfermanager.New(c, func(o *transfermanager.Options) {
		o.RequestChecksumCalculation = calc
		o.PartSizeBytes = UploadPartSize
		o.Concurrency = UploadConcurrency
		o.MultipartUploadThreshold = UploadPartSize
	})
	return nil
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
	for k, vs := range q {
		if sensitiveParam(k) {
			q[k] = []string{redacted}
			changed = true
			continue
		}
		// A URL-valued parameter (an endpoint) may carry user information.
		for i, v := range vs {
			if !strings.Contains(v, "@") {
				continue
			}
			if pu, err := url.Parse(v); err != nil || pu.User != nil || pu.Opaque != "" {
				vs[i] = redacted
				changed = true
			}
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
