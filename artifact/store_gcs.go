//go:build !hactl_s3only

package artifact

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"gocloud.dev/blob"

	"github.com/hactl-dev/hactl/artifact/gcs"
)

// openGCS opens a gs:// bucket with the artifact/gcs driver. Its query
// parameters: endpoint (the JSON API's base URL, an http(s) URL such as
// an emulator's http://127.0.0.1:4443; default
// https://storage.googleapis.com) and anonymous=true (no credentials: an
// emulator or a public bucket). The credentials are c's JSON key, else
// Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS, workload
// identity, the metadata server).
func openGCS(ctx context.Context, u *url.URL, c *Credentials) (*blob.Bucket, error) {
	var o gcs.Options
	for k, v := range u.Query() {
		if len(v) > 1 {
			return nil, fmt.Errorf("query parameter %q is given %d times", k, len(v))
		}
		switch k {
		case "endpoint":
			e, err := url.Parse(v[0])
			switch {
			case err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.Opaque != "":
				return nil, fmt.Errorf("endpoint=%s is not an http(s) URL", RedactURL(v[0]))
			case e.User != nil:
				return nil, errors.New("the endpoint URL carries user information; give credentials through --store-secret")
			case e.RawQuery != "" || e.Fragment != "":
				return nil, fmt.Errorf("endpoint=%s: the endpoint takes no query or fragment", RedactURL(v[0]))
			}
			o.Endpoint = v[0]
		case "anonymous":
			on, err := parseBool(k, v[0])
			if err != nil {
				return nil, err
			}
			o.Anonymous = on
		default:
			return nil, fmt.Errorf("unknown query parameter %q for a gs:// store (want endpoint or anonymous)", k)
		}
	}
	if c != nil {
		if o.Anonymous {
			return nil, errors.New("anonymous=true cannot be combined with a Secret reference")
		}
		o.CredentialsJSON = []byte(c.GoogleCredentialsJSON)
	}
	b, err := gcs.OpenBucket(ctx, u.Host, o)
	if err != nil && c == nil && !o.Anonymous {
		return nil, fmt.Errorf("no usable Google Cloud credentials (give --store-secret with %s, set GOOGLE_APPLICATION_CREDENTIALS, use workload identity, or anonymous=true for an emulator): %w", SecretKeyGoogleCredentialsJSON, err)
	}
	return b, err
}
