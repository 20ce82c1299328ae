// Package redact replaces credentials in text before it leaves the
// machine in a report: the values of the Secrets it is told about
// (wherever they appear, and in base64), and whatever looks like a
// credential (private keys, passwords in URLs, values of keys and flags
// named like a credential, bearer tokens, JWTs, cloud access keys). It
// counts what it replaced, per file and rule, for the report's
// REDACTIONS file; it never records a replaced value.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Mark replaces a withheld value.
const Mark = "REDACTED"

// MinSecretLen is the shortest Secret value searched for: a shorter one
// ("1", "true") cannot be told apart from ordinary text. Such values are
// listed in the REDACTIONS file as not searched for.
const MinSecretLen = 4

// Redactor replaces credentials and counts what it replaced.
type Redactor struct {
	secrets []secret
	// tooShort and unread name Secret keys whose values were not
	// searched for, and why.
	tooShort   []string
	identities []string
	unread     []string
	read       []string
	counts     map[string]map[string]int
	names      map[string]map[string]bool
}

type secret struct {
	value  []byte
	origin string
}

// New returns a Redactor with no Secret values yet.
func New() *Redactor {
	return &Redactor{counts: map[string]map[string]int{}, names: map[string]map[string]bool{}}
}

// identityKeys are the last words of Secret keys that hold who, not a
// credential (username, superuser-username): their values ("postgres",
// "admin") are ordinary words a report is full of.
var identityKeys = []string{"username", "user", "login", "name"}

// AddSecret makes the value of key in a Secret (origin, e.g. "Secret
// db/pg-auth key password") one to replace wherever it appears, as it is
// and in base64; a key that names an identity (username) is listed as
// not searched for.
func (r *Redactor) AddSecret(origin, key string, value []byte) {
	words := strings.FieldsFunc(strings.ToLower(key), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if len(words) > 0 && slices.Contains(identityKeys, words[len(words)-1]) {
		r.identities = append(r.identities, origin)
		return
	}
	v := bytes.TrimSpace(value)
	if len(v) < MinSecretLen {
		if len(v) > 0 {
			r.tooShort = append(r.tooShort, origin)
		}
		return
	}
	for _, f := range forms(v, value) {
		r.secrets = append(r.secrets, secret{value: []byte(f.value), origin: origin + f.how})
	}
	// A value of several lines (a pgpass or configuration file): each
	// value of a key in it named like a credential, on its own.
	if bytes.ContainsAny(v, "\n") {
		for _, line := range strings.Split(string(v), "\n") {
			m := lineValue.FindStringSubmatch(line)
			if m == nil || !CredentialName(m[1]) {
				continue
			}
			if x := strings.Trim(strings.TrimSpace(m[2]), `"'`); len(x) >= MinSecretLen {
				for _, f := range forms([]byte(x), nil) {
					r.secrets = append(r.secrets, secret{value: []byte(f.value), origin: origin + " (its " + m[1] + f.how + ")"})
				}
			}
		}
	}
	// Longest first: a value that holds another is replaced whole.
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i].value) > len(r.secrets[j].value) })
	r.secrets = slices.CompactFunc(r.secrets, func(a, b secret) bool { return bytes.Equal(a.value, b.value) })
}

// lineValue is one "key: value" or "key=value" line.
var lineValue = regexp.MustCompile(`^\s*["']?([A-Za-z0-9_.-]+)["']?\s*[:=]\s*(.+?)\s*,?$`)

// form is one way a value may be written.
type form struct{ value, how string }

// forms are the ways v (trimmed from raw) appears in text: as it is;
// escaped as JSON (with and without HTML escaping) and Go's %q write it;
// with control characters dropped (as names and details are printed);
// in base64 (standard and URL-safe, padded or not), also of raw when it
// differs (a Secret made from a file ends in a newline).
func forms(v, raw []byte) []form {
	out := []form{{string(v), ""}}
	add := func(s, how string) {
		if len(s) >= MinSecretLen && !slices.ContainsFunc(out, func(f form) bool { return f.value == s }) {
			out = append(out, form{s, how})
		}
	}
	var b bytes.Buffer
	for _, html := range []bool{true, false} {
		b.Reset()
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		if e.Encode(string(v)) == nil {
			add(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`), " (escaped)")
		}
	}
	q := strconv.Quote(string(v))
	add(q[1:len(q)-1], " (escaped)")
	add(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, string(v)), " (printed)")
	for _, x := range [][]byte{v, raw} {
		if len(x) == 0 {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			add(enc.EncodeToString(x), " (base64)")
		}
	}
	return out
}

// SecretRead records that Secret name's values are searched for.
func (r *Redactor) SecretRead(name string) { r.read = append(r.read, name) }

// SecretUnread records that Secret name could not be read (why): its
// values are not searched for; the patterns still apply.
func (r *Redactor) SecretUnread(name, why string) {
	r.unread = append(r.unread, name+": "+why)
}

// Count records n replacements in file under rule (what was withheld,
// in the user's words), naming what (a variable's name, never its
// value) when given.
func (r *Redactor) Count(file, rule, what string, n int) {
	if n == 0 {
		return
	}
	if r.counts[file] == nil {
		r.counts[file] = map[string]int{}
	}
	r.counts[file][rule] += n
	if what != "" {
		k := file + "\x00" + rule
		if r.names[k] == nil {
			r.names[k] = map[string]bool{}
		}
		r.names[k][what] = true
	}
}

// rule is one pattern: re's matches are replaced by repl (with re's
// groups), counted under why.
type rule struct {
	why  string
	re   *regexp.Regexp
	repl string
}

// credentialKey is a key or flag named like a credential.
const credentialKey = `(?:[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|apikey|api_key|api-key|accesskey|access_key|access-key|privatekey|private_key|private-key|credential|credentials|auth|conninfo|dsn)[A-Za-z0-9_.-]*)`

var rules = []rule{
	{"private key (PEM block)", regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----`), "-----BEGIN ${1}PRIVATE KEY----- " + Mark + " -----END ${1}PRIVATE KEY-----"},
	{"password in a URL (user:password@host)", regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'"]*):([^/\s@'"]+)@`), "${1}:" + Mark + "@"},
	{"authorization header", regexp.MustCompile(`(?i)(authorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic|token)[ \t]+)[A-Za-z0-9._~+/=-]+`), "${1}" + Mark},
	{"JSON web token", regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Mark},
	{"cloud access key ID", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Mark},
	{"password=… in a connection string", regexp.MustCompile(`(?i)(\bpassword[ \t]*=[ \t]*)('[^']*'|[^\s'";,&]+)`), "${1}" + Mark},
	{"value of a key or flag named like a credential", regexp.MustCompile(`(?i)(` + credentialKey + `["']?[ \t]*[:=][ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s"',;&{}\[\]=][^\s"',;&}\]]*)`), ""},
}

// harmless are suffixes of keys named like a credential whose values
// name or describe one rather than hold it (secretName: pg-auth,
// tokenFile: /var/run/…), or are no credential at all (etcd's
// --initial-cluster-token only keeps clusters apart), kept so a report
// stays useful.
var harmless = []string{"cluster-token", "name", "names", "ref", "file", "path", "dir", "mode", "type", "ttl", "seconds", "period", "count", "enabled", "method", "methods", "version", "kind", "secret-ref", "keyref"}

// Text returns b with every Secret value and every credential-looking
// string replaced, counting the replacements under file.
func (r *Redactor) Text(file string, b []byte) []byte {
	for _, s := range r.secrets {
		if n := bytes.Count(b, s.value); n > 0 {
			b = bytes.ReplaceAll(b, s.value, []byte(Mark))
			r.Count(file, "the value of a Secret", s.origin, n)
		}
	}
	for _, ru := range rules {
		if ru.repl != "" {
			n := 0
			b = ru.re.ReplaceAllFunc(b, func(m []byte) []byte {
				out := ru.re.Expand(nil, []byte(ru.repl), m, ru.re.FindSubmatchIndex(m))
				if !bytes.Equal(out, m) {
					n++
				}
				return out
			})
			r.Count(file, ru.why, "", n)
			continue
		}
		b = ru.re.ReplaceAllFunc(b, func(m []byte) []byte {
			sub := ru.re.FindSubmatch(m)
			key := strings.ToLower(strings.TrimRight(string(sub[1]), " \t:=\"'"))
			val := string(sub[2])
			quote := ""
			if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') {
				quote, val = val[:1], val[1:len(val)-1]
			}
			// A key longer than any name (a line of base64 holding
			// "auth") is not a key.
			if val == "" || strings.HasPrefix(val, Mark) || harmlessKey(key) || len(key) > 40 || authScheme[strings.ToLower(val)] {
				return m
			}
			r.Count(file, ru.why, keyName(key), 1)
			return append(slices.Clone(sub[1]), []byte(quote+Mark+quote)...)
		})
	}
	return b
}

// authScheme are the words before a credential in an Authorization
// header, which the header's own rule withholds.
var authScheme = map[string]bool{"bearer": true, "basic": true, "token": true, "negotiate": true, "digest": true}

func harmlessKey(key string) bool {
	for _, h := range harmless {
		if strings.HasSuffix(key, h) {
			return true
		}
	}
	return false
}

// keyName is the key as the REDACTIONS file names it.
func keyName(key string) string {
	key = strings.TrimLeft(key, "-")
	if len(key) > 60 {
		key = key[:60] + "…"
	}
	return key
}

// CredentialName reports whether name (an environment variable, a flag)
// is named like a credential.
func CredentialName(name string) bool {
	l := strings.ToLower(name)
	if l == "pass" || strings.HasSuffix(l, "_pass") || strings.HasSuffix(l, "-pass") {
		return true
	}
	return credentialName.MatchString(name) && !harmlessKey(l)
}

var credentialName = regexp.MustCompile(`(?i)^-*` + credentialKey + `$`)

// Summary is the REDACTIONS file: what was withheld, per file and rule,
// and which Secrets' values were searched for.
func (r *Redactor) Summary() []byte {
	var b strings.Builder
	b.WriteString(`What this report withholds

Never included: Secrets. Their values are searched for in every file and
replaced by ` + Mark + ` (as they are and in base64), wherever they appear.
Also replaced in every file: private keys (PEM), passwords in URLs,
authorization headers, JSON web tokens, cloud access key IDs, and the
value of any key, flag or environment variable named like a credential
(password, passphrase, secret, token, API key, access key, private key,
credential, auth, conninfo, dsn).
The values themselves are never written anywhere; this file names only
where they were and what they were.

`)
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		s := slices.Clone(items)
		slices.Sort(s)
		for _, it := range slices.Compact(s) {
			fmt.Fprintf(&b, "  %s\n", it)
		}
		b.WriteString("\n")
	}
	section("Secrets whose values were searched for", r.read)
	section("Secrets that could not be read (their values were not searched for; the patterns above still applied)", r.unread)
	section("Secret values shorter than 4 characters, not searched for (they cannot be told apart from ordinary text)", r.tooShort)
	section("Secret values that name an identity (user names), not searched for", r.identities)
	files := make([]string, 0, len(r.counts))
	for f := range r.counts {
		files = append(files, f)
	}
	slices.Sort(files)
	if len(files) == 0 {
		b.WriteString("Nothing was replaced.\n")
	} else {
		b.WriteString("Replaced, per file:\n")
	}
	for _, f := range files {
		fmt.Fprintf(&b, "  %s\n", f)
		rs := make([]string, 0, len(r.counts[f]))
		for ru := range r.counts[f] {
			rs = append(rs, ru)
		}
		slices.Sort(rs)
		for _, ru := range rs {
			line := fmt.Sprintf("    %d × %s", r.counts[f][ru], ru)
			if ns := r.names[f+"\x00"+ru]; len(ns) > 0 {
				var names []string
				for n := range ns {
					names = append(names, n)
				}
				slices.Sort(names)
				line += " (" + strings.Join(names, ", ") + ")"
			}
			b.WriteString(line + "\n")
		}
	}
	return []byte(b.String())
}

// Value redacts a decoded JSON document (maps, lists, strings, numbers)
// and returns it: every string through Text, before any encoder can
// escape it or fold it across lines, and the string value of every key
// named like a credential replaced whole.
func (r *Redactor) Value(file string, v any) any {
	switch x := v.(type) {
	case string:
		return string(r.Text(file, []byte(x)))
	case []any:
		for i := range x {
			x[i] = r.Value(file, x[i])
		}
		return x
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && s != "" && s != Mark && CredentialName(k) {
				x[k] = Mark
				r.Count(file, "value of a key named like a credential", keyName(strings.ToLower(k)), 1)
				continue
			}
			x[k] = r.Value(file, e)
		}
		return x
	}
	return v
}

// JSON redacts a JSON document value by value (see Value) and encodes
// it again, indented, without escaping HTML characters; a document that
// is not JSON is redacted as text.
func (r *Redactor) JSON(file string, b []byte) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		return r.Text(file, b)
	}
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(r.Value(file, v)); err != nil {
		return r.Text(file, b)
	}
	return out.Bytes()
}
