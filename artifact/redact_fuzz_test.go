package artifact_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/hactl-dev/hactl/artifact"
)

// FuzzRedactURL: whatever the URL, a password in its user information
// and the value of a secret-looking query parameter never appear in what
// RedactURL shows.
func FuzzRedactURL(f *testing.F) {
	f.Add("s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1", "user", "hunter2secret", "secret_access_key", "AKIAVALUE123")
	f.Add("gs://b", "", "", "token", "tok;en-value")
	f.Add("azblob://c?x=1#frag", "u", "p@ss:word/1", "sig", "sig%value")
	f.Fuzz(func(t *testing.T, base, user, pass, key, val string) {
		u, err := url.Parse(base)
		if err != nil || u.Scheme == "" || u.Opaque != "" {
			return
		}
		if pass != "" {
			u.User = url.UserPassword(user, pass)
		}
		raw := u.String()
		if key != "" {
			sep := "?"
			if strings.Contains(raw, "?") {
				sep = "&"
			}
			raw += sep + key + "=" + val
		}
		got := artifact.RedactURL(raw)
		secretKey := false
		for _, w := range []string{"key", "secret", "token", "password", "passwd", "sig", "credential", "auth"} {
			if strings.Contains(strings.ToLower(key), w) {
				secretKey = true
			}
		}
		for _, s := range []string{pass, url.QueryEscape(pass), url.PathEscape(pass)} {
			if len(s) >= 6 && !strings.Contains(base, s) && !strings.Contains(user, s) && !strings.Contains(key, s) && !strings.Contains(val, s) && strings.Contains(got, s) {
				t.Fatalf("RedactURL(%q) = %q shows the password %q", raw, got, s)
			}
		}
		if secretKey && len(val) >= 6 && !strings.Contains(base, val) && !strings.Contains(key, val) && !strings.Contains(pass, val) && !strings.Contains(user, val) && strings.Contains(got, val) {
			t.Fatalf("RedactURL(%q) = %q shows the value of %q", raw, got, key)
		}
	})
}
