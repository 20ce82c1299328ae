package artifact

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
)

// Credentials are object-store credentials read from a Secret reference
// (or, in hactl's restore pods, from the environment the Secret fills).
// Each store scheme has its own fields; OpenStore refuses credentials
// for another scheme than its URL's. They are never printed: every
// formatting path (fmt verbs, JSON, slog) yields "[redacted]", and a Store
// scrubs their values from every error it returns.
type Credentials struct {
	// s3:// (SecretKeyAccessKeyID, SecretKeySecretAccessKey,
	// SecretKeySessionToken).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// gs:// (SecretKeyGoogleCredentialsJSON): a Google credentials JSON
	// document, typically a service account's key file.
	GoogleCredentialsJSON string

	// azblob://: an account and its shared key (SecretKeyAzureAccount,
	// SecretKeyAzureKey), an account and a SAS token
	// (SecretKeyAzureSASToken), or a connection string
	// (SecretKeyAzureConnectionString). With several, the first of that
	// order is used, as the Azure SDKs do.
	AzureAccount          string
	AzureKey              string
	AzureSASToken         string
	AzureConnectionString string
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

// secrets lists every secret value the credentials hold, and the secret
// parts of compound ones (the private key of a JSON key, as it is and as
// JSON escapes it; a SAS token's signature; a connection string's account
// key and signature), so that a Store can scrub them from errors. The
// account name is not secret.
func (c *Credentials) secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	add(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	if c.GoogleCredentialsJSON != "" {
		add(c.GoogleCredentialsJSON)
		var doc map[string]any
		if json.Unmarshal([]byte(c.GoogleCredentialsJSON), &doc) == nil {
			for _, k := range []string{"private_key", "private_key_id", "client_secret", "refresh_token"} {
				if s, ok := doc[k].(string); ok && s != "" {
					add(s)
					if b, err := json.Marshal(s); err == nil {
						add(strings.Trim(string(b), `"`))
					}
					// A PEM key's lines, so that part of one is scrubbed too.
					for _, line := range strings.Split(s, "\n") {
						if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
							add(line)
						}
					}
				}
			}
		}
	}
	add(c.AzureKey)
	add(sasSecrets(c.AzureSASToken)...)
	if cs := c.AzureConnectionString; cs != "" {
		add(cs)
		for _, part := range strings.Split(cs, ";") {
			k, v, _ := strings.Cut(part, "=")
			switch strings.TrimSpace(k) {
			case "AccountKey":
				add(v)
			case "SharedAccessSignature":
				add(sasSecrets(v)...)
			}
		}
	}
	// Longest first, so that a value containing another is replaced whole.
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// sasSecrets is a SAS token and its signature, as written and decoded.
func sasSecrets(sas string) []string {
	sas = strings.TrimPrefix(strings.TrimSpace(sas), "?")
	if sas == "" {
		return nil
	}
	out := []string{sas}
	for _, part := range strings.Split(sas, "&") {
		k, v, _ := strings.Cut(part, "=")
		if k != "sig" || v == "" {
			continue
		}
		out = append(out, v)
		if d, err := url.QueryUnescape(v); err == nil {
			out = append(out, d, url.QueryEscape(d))
		}
	}
	return out
}

// Secret (and environment variable) names read by CredentialsFromSecret
// and CredentialsFromEnv, per store scheme.
const (
	// s3://
	SecretKeyAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretKeySecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	SecretKeySessionToken    = "AWS_SESSION_TOKEN"
	// gs://
	SecretKeyGoogleCredentialsJSON = "GOOGLE_APPLICATION_CREDENTIALS_JSON"
	// azblob://
	SecretKeyAzureAccount          = "AZURE_STORAGE_ACCOUNT"
	SecretKeyAzureKey              = "AZURE_STORAGE_KEY"
	SecretKeyAzureSASToken         = "AZURE_STORAGE_SAS_TOKEN"
	SecretKeyAzureConnectionString = "AZURE_STORAGE_CONNECTION_STRING"
)

// credentialKeys are the keys each scheme reads.
var credentialKeys = map[string][]string{
	"s3":     {SecretKeyAccessKeyID, SecretKeySecretAccessKey, SecretKeySessionToken},
	"gs":     {SecretKeyGoogleCredentialsJSON},
	"azblob": {SecretKeyAzureAccount, SecretKeyAzureKey, SecretKeyAzureSASToken, SecretKeyAzureConnectionString},
}

// credentialWants says which keys a scheme needs, for error messages.
var credentialWants = map[string]string{
	"s3":     SecretKeyAccessKeyID + " and " + SecretKeySecretAccessKey + " (and optionally " + SecretKeySessionToken + ")",
	"gs":     SecretKeyGoogleCredentialsJSON + " (a service account's JSON key)",
	"azblob": SecretKeyAzureAccount + " with " + SecretKeyAzureKey + " or " + SecretKeyAzureSASToken + ", or " + SecretKeyAzureConnectionString,
}

// CredentialSchemes are the store URL schemes that take credentials.
var CredentialSchemes = []string{"s3", "gs", "azblob"}

// CredentialKeys returns the Secret keys (and environment variables) a
// store scheme's credentials are read from; nil for a scheme that takes
// none.
func CredentialKeys(scheme string) []string {
	return append([]string(nil), credentialKeys[scheme]...)
}

// StoreScheme is the scheme of a store URL ("" when it does not parse).
func StoreScheme(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Scheme
}

// CredentialsFromSecret builds Credentials for a store of scheme ("s3",
// "gs", "azblob"; "" infers it from the keys present, which must then be
// those of one scheme) from a Secret's data (the caller reads the
// Secret):
//
//	s3://      AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN optional)
//	gs://      GOOGLE_APPLICATION_CREDENTIALS_JSON
//	azblob://  AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN,
//	           or AZURE_STORAGE_CONNECTION_STRING
//
// Other keys are ignored. Errors name the Secret and the keys that are
// missing or for another scheme, never a value.
func CredentialsFromSecret(name, scheme string, data map[string][]byte) (*Credentials, error) {
	get := func(k string) string { return strings.TrimSpace(string(data[k])) }
	return credentialsFrom(fmt.Sprintf("secret %q", name), scheme, get)
}

// CredentialsFromEnv builds Credentials for a gs:// or azblob:// store
// from the environment variables named as CredentialsFromSecret's keys
// (hactl's restore pods get the Secret's keys as environment through
// envFrom); nil when none of the scheme's variables is set (the SDK's
// defaults then apply). An s3:// store always gets nil: the AWS SDK's
// default chain reads the same AWS_* variables (and a profile, a role or
// web identity when they are absent).
func CredentialsFromEnv(scheme string, getenv func(string) string) (*Credentials, error) {
	if scheme != "gs" && scheme != "azblob" {
		return nil, nil
	}
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	set := false
	for _, k := range credentialKeys[scheme] {
		// An account name alone is no credential: the SDK's default
		// chain (managed or workload identity) signs for it.
		set = set || (get(k) != "" && k != SecretKeyAzureAccount)
	}
	if !set {
		return nil, nil
	}
	return credentialsFrom("the environment", scheme, get)
}

func credentialsFrom(what, scheme string, get func(string) string) (*Credentials, error) {
	present := func(s string) []string {
		var out []string
		for _, k := range credentialKeys[s] {
			if get(k) != "" {
				out = append(out, k)
			}
		}
		return out
	}
	if scheme == "" {
		var found []string
		for _, s := range CredentialSchemes {
			if len(present(s)) > 0 {
				found = append(found, s)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("%s holds no store credentials: want %s", what, wantsAll())
		case 1:
			scheme = found[0]
		default:
			return nil, fmt.Errorf("%s holds credentials for %s:// stores: name the store URL so the right ones are used", what, strings.Join(found, ":// and "))
		}
	}
	if _, ok := credentialKeys[scheme]; !ok {
		return nil, fmt.Errorf("%s: a %s:// store takes no credentials; drop the Secret reference", what, scheme)
	}
	if len(present(scheme)) == 0 {
		var other []string
		for _, s := range CredentialSchemes {
			if s != scheme {
				for _, k := range present(s) {
					other = append(other, k+" ("+s+"://)")
				}
			}
		}
		if len(other) > 0 {
			return nil, fmt.Errorf("%s holds %s, credentials for another kind of store; a %s:// store needs %s", what, strings.Join(other, ", "), scheme, credentialWants[scheme])
		}
		return nil, fmt.Errorf("%s holds none of %s: a %s:// store needs %s", what, strings.Join(credentialKeys[scheme], ", "), scheme, credentialWants[scheme])
	}
	return schemeCredentials(what, scheme, get)
}

// schemeCredentials reads the credentials of a scheme:// store, which
// get holds some of, and says which are missing or malformed.
func schemeCredentials(what, scheme string, get func(string) string) (*Credentials, error) {
	c := &Credentials{}
	var missing []string
	switch scheme {
	case "s3":
		c.AccessKeyID, c.SecretAccessKey, c.SessionToken = get(SecretKeyAccessKeyID), get(SecretKeySecretAccessKey), get(SecretKeySessionToken)
		if c.AccessKeyID == "" {
			missing = append(missing, SecretKeyAccessKeyID)
		}
		if c.SecretAccessKey == "" {
			missing = append(missing, SecretKeySecretAccessKey)
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s has no %s", what, strings.Join(missing, " or "))
		}
	case "gs":
		c.GoogleCredentialsJSON = get(SecretKeyGoogleCredentialsJSON)
		var doc map[string]any
		if err := json.Unmarshal([]byte(c.GoogleCredentialsJSON), &doc); err != nil {
			return nil, fmt.Errorf("%s: %s is not a JSON object (a Google credentials file, such as a service account's key)", what, SecretKeyGoogleCredentialsJSON)
		}
		if t, _ := doc["type"].(string); t == "" {
			return nil, fmt.Errorf("%s: %s has no \"type\" (a Google credentials file, such as a service account's key, has \"type\": \"service_account\")", what, SecretKeyGoogleCredentialsJSON)
		}
	case "azblob":
		c.AzureAccount, c.AzureKey = get(SecretKeyAzureAccount), get(SecretKeyAzureKey)
		c.AzureSASToken, c.AzureConnectionString = get(SecretKeyAzureSASToken), get(SecretKeyAzureConnectionString)
		switch {
		case (c.AzureKey != "" || c.AzureSASToken != "") && c.AzureAccount == "":
			k := SecretKeyAzureKey
			if c.AzureKey == "" {
				k = SecretKeyAzureSASToken
			}
			return nil, fmt.Errorf("%s has %s but no %s", what, k, SecretKeyAzureAccount)
		case c.AzureKey == "" && c.AzureSASToken == "" && c.AzureConnectionString == "":
			return nil, fmt.Errorf("%s has %s but neither %s nor %s (or give %s)", what, SecretKeyAzureAccount, SecretKeyAzureKey, SecretKeyAzureSASToken, SecretKeyAzureConnectionString)
		}
	}
	return c, nil
}

func wantsAll() string {
	var out []string
	for _, s := range CredentialSchemes {
		out = append(out, s+":// "+credentialWants[s])
	}
	return strings.Join(out, "; ")
}

// scheme is the store scheme c is for ("" for none, "mixed" when c holds
// several schemes' fields).
func (c *Credentials) scheme() string {
	var found []string
	if c.AccessKeyID != "" || c.SecretAccessKey != "" || c.SessionToken != "" {
		found = append(found, "s3")
	}
	if c.GoogleCredentialsJSON != "" {
		found = append(found, "gs")
	}
	if c.AzureAccount != "" || c.AzureKey != "" || c.AzureSASToken != "" || c.AzureConnectionString != "" {
		found = append(found, "azblob")
	}
	switch len(found) {
	case 0:
		return ""
	case 1:
		return found[0]
	}
	return "mixed"
}

// forScheme checks that c holds credentials for a store of scheme.
func (c *Credentials) forScheme(scheme string) error {
	want, ok := credentialWants[scheme]
	if !ok {
		return fmt.Errorf("a %s:// store takes no credentials", scheme)
	}
	switch got := c.scheme(); got {
	case scheme:
		return nil
	case "":
		return fmt.Errorf("the credentials are empty; a %s:// store needs %s", scheme, want)
	case "mixed":
		return fmt.Errorf("the credentials mix several stores' keys; a %s:// store needs %s", scheme, want)
	default:
		return fmt.Errorf("the credentials are for %s:// stores (%s); a %s:// store needs %s", got, strings.Join(credentialKeys[got], ", "), scheme, want)
	}
}
