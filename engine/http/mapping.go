package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/jsonpath"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// Keys of a mapping (the ConfigMap's data).
const (
	KeyPort         = "port"
	KeyScheme       = "scheme"
	KeyPath         = "path"
	KeyMethod       = "method"
	KeyBody         = "body"
	KeyMemberID     = "memberID"
	KeyClusterID    = "clusterID"
	KeyRole         = "role"
	KeyLeaderRoles  = "leaderRoles"
	KeyLearnerRoles = "learnerRoles"
	KeyLeader       = "leader"
	KeyLearner      = "learner"
	KeyTerm         = "term"
	KeyApplied      = "applied"
	KeyFrontier     = "frontier"
	KeyReady        = "ready"
	KeyReadyValues  = "readyValues"
	KeyVersion      = "version"
	KeyPaused       = "paused"
	KeyQuorum       = "quorum"
	KeyLagThreshold = "lagThreshold"
	KeyReplace      = "replace"
	// KeySelfWrittenLabels and KeySelfWrittenAnnotations name the pod
	// labels and annotations the members rewrite on their own pods (as a
	// Patroni member its role label and its status annotation): a fence
	// on a member's pod leaves them out, or every such write would read
	// as a change by someone since the plan was confirmed.
	KeySelfWrittenLabels      = "selfWrittenLabels"
	KeySelfWrittenAnnotations = "selfWrittenAnnotations"
)

// ReplaceRecreate, the value of a mapping's replace key, says that a
// member whose pod and volume are deleted rebuilds itself from its peers
// when the StatefulSet recreates it (as a Patroni member copies the
// primary): hactl replaces such members by that fenced delete.
const ReplaceRecreate = "recreate"

// Quorum modes.
const (
	// QuorumMajority: the members vote (raft, Paxos): a majority of the
	// voters must answer, and the cluster tolerates losing the rest.
	QuorumMajority = "majority"
	// QuorumLeader: the leader serves alone (its election lives
	// elsewhere, as Patroni's in its DCS); losing it needs one more
	// member to take over, so the cluster tolerates losing all but two.
	QuorumLeader = "leader"
)

// expressions are the keys whose values are JSONPath expressions.
var expressions = []string{KeyMemberID, KeyClusterID, KeyRole, KeyLeader, KeyLearner, KeyTerm, KeyApplied, KeyFrontier, KeyReady, KeyVersion, KeyPaused}

// known are every key a mapping may hold.
var known = append(slices.Clone(expressions), KeyPort, KeyScheme, KeyPath, KeyMethod, KeyBody, KeyLeaderRoles, KeyLearnerRoles, KeyReadyValues, KeyQuorum, KeyLagThreshold, KeyReplace, KeySelfWrittenLabels, KeySelfWrittenAnnotations)

// Mapping says where a member's status document is served and how to
// read hactl's facts from it.
type Mapping struct {
	Port int
	// Scheme is "http" or "https"; "" (not set): https when the cluster
	// names client TLS (hactl.dev/client-tls-secret), else http.
	Scheme string
	Path   string
	Method string
	Body   string
	// paths holds each fact's expression: one or more JSONPath
	// templates, one per line; the first that yields a value wins.
	paths map[string][]*jsonpath.JSONPath
	// LeaderRoles and LearnerRoles are the role values that mean "leads"
	// and "does not vote" (case-insensitive).
	LeaderRoles, LearnerRoles []string
	// ReadyValues are the values of the ready expression that mean ready.
	ReadyValues []string
	Quorum      string
	// LagThreshold is the lag, in the store's positions, a member may
	// have and still count as caught up (0: the user's --lag-threshold).
	LagThreshold uint64
	// Replace is how a member is replaced: ReplaceRecreate, or "" when
	// the mapping does not say (hactl then offers no replace).
	Replace string
	// SelfWritten are the pod labels and annotations the members rewrite
	// on their own pods; nil when the mapping names none.
	SelfWritten *model.SelfWritten
}

// Parse reads a mapping from a ConfigMap's data. It names every problem
// it finds: an unknown key, a bad port, an expression that does not
// parse, and a mapping that reads neither a role nor a leader.
func Parse(data map[string]string) (*Mapping, error) {
	if data == nil {
		return nil, errors.New("no mapping: annotate the StatefulSet with hactl.dev/engine-config naming a ConfigMap that holds one")
	}
	m := &Mapping{
		Path: "/", Method: "GET", paths: map[string][]*jsonpath.JSONPath{},
		LeaderRoles: []string{"leader", "primary", "master"}, LearnerRoles: []string{"learner"},
		ReadyValues: []string{"true"}, Quorum: QuorumMajority,
	}
	var errs []error
	for k := range data {
		if !slices.Contains(known, k) {
			errs = append(errs, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(sorted(known), ", ")))
		}
	}
	errs = append(errs, m.parseRequest(data)...)
	errs = append(errs, m.parseExpressions(data)...)
	errs = append(errs, m.parseRules(data)...)
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, fmt.Errorf("the mapping is not valid: %w", errors.Join(errs...))
	}
	return m, nil
}

// parseRequest reads where and how the document is asked for.
func (m *Mapping) parseRequest(data map[string]string) []error {
	var errs []error
	port, err := strconv.Atoi(strings.TrimSpace(data[KeyPort]))
	switch {
	case data[KeyPort] == "":
		errs = append(errs, errors.New("port is required"))
	case err != nil || port <= 0 || port > 65535:
		errs = append(errs, fmt.Errorf("port %q is not a port number", data[KeyPort]))
	}
	m.Port = port
	if v := strings.TrimSpace(data[KeyScheme]); v != "" {
		if v != "http" && v != "https" {
			errs = append(errs, fmt.Errorf("scheme %q: want http or https", v))
		}
		m.Scheme = v
	}
	if v := strings.TrimSpace(data[KeyPath]); v != "" {
		if !strings.HasPrefix(v, "/") {
			errs = append(errs, fmt.Errorf("path %q must start with /", v))
		}
		m.Path = v
	}
	if v := strings.TrimSpace(data[KeyMethod]); v != "" {
		m.Method = strings.ToUpper(v)
		if m.Method != "GET" && m.Method != "POST" {
			errs = append(errs, fmt.Errorf("method %q: want GET or POST (a status read must change nothing)", v))
		}
	}
	m.Body = data[KeyBody]
	return errs
}

// parseExpressions reads each fact's expressions: one JSONPath in braces
// per line.
func (m *Mapping) parseExpressions(data map[string]string) []error {
	var errs []error
	for _, k := range expressions {
		for i, line := range strings.Split(data[k], "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") || strings.Count(line, "{") != 1 {
				errs = append(errs, fmt.Errorf("%s: %q is not one JSONPath expression in braces (e.g. {.role}); list alternatives on lines of their own", k, line))
				continue
			}
			jp := jsonpath.New(fmt.Sprintf("%s[%d]", k, i)).AllowMissingKeys(true)
			if err := jp.Parse(line); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a JSONPath expression: %v", k, line, err))
				continue
			}
			m.paths[k] = append(m.paths[k], jp)
		}
	}
	if len(m.paths[KeyRole]) == 0 && len(m.paths[KeyLeader]) == 0 {
		errs = append(errs, errors.New("neither role nor leader is mapped: hactl could not tell who leads"))
	}
	return errs
}

// parseRules reads the value lists, the quorum mode and the threshold.
func (m *Mapping) parseRules(data map[string]string) []error {
	var errs []error
	for k, dst := range map[string]*[]string{KeyLeaderRoles: &m.LeaderRoles, KeyLearnerRoles: &m.LearnerRoles, KeyReadyValues: &m.ReadyValues} {
		if v := data[k]; strings.TrimSpace(v) != "" {
			*dst = splitList(v)
		}
	}
	if v := strings.TrimSpace(data[KeyQuorum]); v != "" {
		if v != QuorumMajority && v != QuorumLeader {
			errs = append(errs, fmt.Errorf("quorum %q: want %s or %s", v, QuorumMajority, QuorumLeader))
		}
		m.Quorum = v
	}
	if v := strings.TrimSpace(data[KeyLagThreshold]); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("lagThreshold %q is not a whole number", v))
		}
		m.LagThreshold = n
	}
	if v := strings.TrimSpace(data[KeyReplace]); v != "" {
		if v != ReplaceRecreate {
			errs = append(errs, fmt.Errorf("replace %q: want %s (a member rebuilds itself from its peers on a new volume) or no replace key", v, ReplaceRecreate))
		}
		m.Replace = v
	}
	sw := &model.SelfWritten{Labels: keys(data[KeySelfWrittenLabels]), Annotations: keys(data[KeySelfWrittenAnnotations])}
	for k, names := range map[string][]string{KeySelfWrittenLabels: sw.Labels, KeySelfWrittenAnnotations: sw.Annotations} {
		for _, n := range names {
			if bad := validation.IsQualifiedName(n); len(bad) > 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a label or annotation key: %s", k, n, strings.Join(bad, "; ")))
			}
			if notSelfWritten(n) {
				errs = append(errs, fmt.Errorf("%s: %q is hactl's or the StatefulSet controller's, never a member's own: a fence must see its changes", k, n))
			}
		}
	}
	if len(sw.Labels)+len(sw.Annotations) > 0 {
		m.SelfWritten = sw
	}
	return errs
}

// notSelfWritten: key is one no member writes on its own pod, whose
// change a fence must see: hactl's, and those the StatefulSet controller
// sets on each pod.
func notSelfWritten(key string) bool {
	switch key {
	case "controller-revision-hash", "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index":
		return true
	}
	return strings.HasPrefix(key, "hactl.dev/")
}

// keys are the comma-separated keys in v, trimmed, without empties, as
// written (label and annotation keys are case-sensitive).
func keys(v string) []string {
	var out []string
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// Document is one member's decoded status document.
type Document struct{ v any }

// Decode reads a status document (numbers kept exact).
func Decode(b []byte) (Document, error) {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return Document{}, err
	}
	return Document{v}, nil
}

// Text is what fact key yields from d: the first of its expressions that
// yields a scalar, as text; "" when none does (or the key is not mapped).
func (m *Mapping) Text(d Document, key string) (string, error) {
	for _, jp := range m.paths[key] {
		rs, err := jp.FindResults(d.v)
		if err != nil {
			return "", fmt.Errorf("%s: %v", key, err)
		}
		for _, r := range rs {
			for _, x := range r {
				s, ok, err := scalar(x)
				if err != nil {
					return "", fmt.Errorf("%s: %v", key, err)
				}
				if ok {
					return s, nil
				}
			}
		}
	}
	return "", nil
}

// Uint is what fact key yields from d as a whole number; false when it
// yields nothing.
func (m *Mapping) Uint(d Document, key string) (uint64, bool, error) {
	s, err := m.Text(d, key)
	if err != nil || s == "" {
		return 0, false, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %q is not a whole number", key, s)
	}
	return n, true, nil
}

// Mapped reports whether fact key has an expression.
func (m *Mapping) Mapped(key string) bool { return len(m.paths[key]) > 0 }

// scalar prints one JSONPath result; false for null or nothing.
func scalar(x reflect.Value) (string, bool, error) {
	for x.IsValid() && (x.Kind() == reflect.Interface || x.Kind() == reflect.Pointer) {
		if x.IsNil() {
			return "", false, nil
		}
		x = x.Elem()
	}
	if !x.IsValid() {
		return "", false, nil
	}
	switch v := x.Interface().(type) {
	case json.Number:
		return v.String(), true, nil
	case string:
		// The member's text: no control characters reach a terminal.
		v = engine.Printable(v)
		return v, v != "", nil
	case bool:
		return strconv.FormatBool(v), true, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true, nil
	}
	return "", false, fmt.Errorf("yields a %s, not a single value: point the expression at a string, number or boolean", x.Kind())
}

func splitList(s string) []string {
	out := keys(s)
	for i := range out {
		out[i] = strings.ToLower(out[i])
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
