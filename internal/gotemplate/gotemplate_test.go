package gotemplate_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/hactl-dev/hactl/internal/gotemplate"
)

// documents are decoded as kubectl's template printer decodes an object:
// apimachinery's json (integers as int64, other numbers as float64).
var documents = []string{
	`{"apiVersion":"hactl.dev/v1alpha1","kind":"ClusterStatus",
	  "metadata":{"name":"etcd-a","namespace":"prod","labels":{"team":"db","tier":""}},
	  "readyMembers":2,"members":[
	    {"name":"etcd-a-0","role":"leader","lag":0,"ready":true,"ip":"10.0.0.1","term":7,"certs":[]},
	    {"name":"etcd-a-1","role":"follower","lag":12,"ready":true,"ip":null},
	    {"name":"etcd-a-2","role":"","lag":null,"ready":false,"probe":{"error":"dial tcp: i/o timeout","ms":1500.5}},
	    null],
	  "verdict":{"controlReady":true,"failoverReady":false,"reasons":[{"code":"member_lagging","member":"etcd-a-1","detail":"12 entries"}]},
	  "ratio":0.25,"big":12345678901234,"neg":-3,"empty":"","emptyList":[],"emptyMap":{},"nothing":null,
	  "secret":"aGVsbG8gd29ybGQ=","words":["b","a","c"],"nested":[[1,2],[3]],"flag":false,"zero":0,"fzero":0.0,
	  "html":"<a href=\"x\">'&'</a>","unicode":"żółw ☃"}`,
	`{"kind":"ClusterStatusList","apiVersion":"hactl.dev/v1alpha1","items":[]}`,
	`{"kind":"X","n":3,"s":"abc","m":{"b":2,"a":1,"c":null},"l":[1,"x",true,null,{"k":"v"},[1]]}`,
}

var templates = []string{
	// Text, fields, missing keys and nulls.
	``, `plain text`, `{{.kind}}`, `{{.metadata.name}}/{{.metadata.namespace}}`,
	`{{.nope}}`, `{{.nope.deeper}}`, `{{.nothing}}`, `{{.nothing.x}}`, `{{.kind.x}}`,
	`{{.metadata}}`, `{{.members}}`, `{{.}}`, `{{.readyMembers}} {{.ratio}} {{.big}} {{.neg}} {{.fzero}}`,
	`{{.metadata.labels.tier}}|{{.metadata.labels.none}}|{{.empty}}`,
	`{{.n}} {{.s}} {{.m}} {{.l}}`, `{{.m.c}}|{{.m.d}}`, `{{(.nothing).x}}`, `{{(.nope).x}}`,
	`{{$}}`, `{{$.kind}}`, `{{.kind | printf "%q"}}`, `{{"lit"}} {{1}} {{1.5}} {{true}} {{0x10}} {{'a'}} {{1e3}} {{-2}}`,
	`{{nil}}`, `{{.kind 1}}`, `{{1 2}}`, `{{.metadata.name | .kind}}`,
	// Range, with, if, variables, break and continue.
	`{{range .members}}{{.name}}:{{.role}};{{end}}`,
	`{{range $i, $m := .members}}{{$i}}={{$m.name}} {{end}}`,
	`{{range $m := .members}}{{$m}}{{end}}`,
	`{{range .items}}x{{else}}none{{end}}`,
	`{{range .emptyMap}}x{{else}}no map{{end}}`,
	`{{range $k, $v := .metadata.labels}}{{$k}}={{$v}},{{end}}`,
	`{{range $k, $v := .m}}{{$k}}={{$v}},{{end}}`,
	`{{range .words}}{{if eq . "a"}}{{break}}{{end}}{{.}}{{end}}`,
	`{{range .words}}{{if eq . "a"}}{{continue}}{{end}}{{.}}{{end}}`,
	`{{range .nested}}[{{range .}}{{.}}{{end}}]{{end}}`,
	`{{range 3}}{{.}}{{end}}`, `{{range .n}}{{.}},{{end}}`, `{{range $i, $e := 3}}{{end}}`,
	`{{range .kind}}{{end}}`, `{{range .nothing}}x{{else}}null{{end}}`, `{{range .nope}}x{{else}}missing{{end}}`,
	`{{range .l}}{{.}}|{{end}}`, `{{range .l}}{{.k}}|{{end}}`, `{{range .members}}{{.name}}{{end}}`,
	`{{with .verdict}}{{.controlReady}}/{{.failoverReady}}{{end}}`,
	`{{with .nope}}yes{{else}}no{{end}}`, `{{with .nothing}}yes{{else with .kind}}{{.}}{{end}}`,
	`{{if .flag}}t{{else if .zero}}z{{else if .emptyList}}l{{else if .emptyMap}}m{{else}}none{{end}}`,
	`{{if .readyMembers}}r{{end}}{{if .ratio}}f{{end}}{{if .metadata}}m{{end}}{{if .empty}}e{{end}}{{if .fzero}}z{{end}}`,
	`{{$x := .kind}}{{$x}}{{$x = "changed"}} {{$x}}`,
	`{{$n := 0}}{{range .members}}{{$n = .name}}{{end}}{{$n}}`,
	`{{if true}}{{$v := 1}}{{$v}}{{end}}`,
	`{{range $i, $w := .words}}{{if $i}}, {{end}}{{$w}}{{end}}`,
	`{{- .kind -}}  {{- "x" }}`, `{{/* a comment */}}c`,
	// define and template.
	`{{define "row"}}{{.name}}={{.lag}}{{end}}{{range .members}}{{template "row" .}};{{end}}`,
	`{{define "t"}}[{{.}}]{{end}}{{template "t" .kind}}{{template "t"}}`,
	`{{template "missing"}}`, `{{block "b" .kind}}<{{.}}>{{end}}`,
	// Functions.
	`{{len .members}} {{len .metadata}} {{len .kind}} {{len .emptyList}}`, `{{len .nothing}}`, `{{len .nope}}`, `{{len .readyMembers}}`,
	`{{index .members 1}}`, `{{(index .members 0).name}}`, `{{index .members 0 "name"}}`, `{{index .metadata.labels "team"}}`,
	`{{index .metadata.labels "none"}}`, `{{index .nested 0 1}}`, `{{index .kind 0}}`, `{{index .members 9}}`, `{{index .members 4}}`,
	`{{index .members 3 "name"}}`, `{{index .nope 0}}`, `{{index .metadata 1}}`, `{{index .words .readyMembers}}`, `{{index .members -1}}`,
	`{{index .}}`, `{{index .readyMembers 0}}`,
	`{{slice .words 1}} {{slice .words 1 2}} {{slice .words 0 1 2}} {{slice .kind 1 3}}`, `{{slice .kind 0 1 2}}`,
	`{{slice .words 2 1}}`, `{{slice .words .readyMembers}}`, `{{slice .words (.readyMembers)}}`, `{{slice .nope 1}}`, `{{slice .words 0 9}}`,
	`{{not .flag}} {{not .kind}} {{not .nope}} {{not .nothing}}`,
	`{{and .kind .readyMembers}} {{and .flag .kind}} {{or .flag .empty}} {{or .nope .kind}} {{and .kind .nope}} {{and}}`,
	`{{.kind | and .metadata}} {{.flag | or .zero}}`,
	`{{print .kind .readyMembers .ratio}} {{print "a" "b"}} {{print .nope}} {{print .nothing}} {{println .kind}}`,
	`{{printf "%s has %d ready (%.2f) %v %v" .metadata.name .readyMembers .ratio .nope .nothing}}`,
	`{{printf "%T %T %T" .readyMembers .ratio .members}}`, `{{printf .kind}}`, `{{printf 3}}`, `{{printf .readyMembers}}`,
	`{{html .html}} {{js .html}} {{urlquery .html}} {{html .readyMembers .kind}} {{.html | html}}`,
	`{{eq .kind "ClusterStatus"}} {{eq .readyMembers 2}} {{eq .ratio 0.25}} {{eq .flag false}} {{eq .kind "a" "b" "ClusterStatus"}}`,
	`{{eq .nope "x"}} {{eq .nope .nothing}} {{eq .nothing nil}} {{eq .members nil}}`, `{{eq .members .members}}`, `{{eq .readyMembers 2.0}}`,
	`{{eq .kind}}`, `{{eq .kind 1}}`, `{{ne .kind "x"}} {{ne .readyMembers 2}}`, `{{ne .members .metadata}}`,
	`{{lt .readyMembers 3}} {{le .readyMembers 2}} {{gt .ratio 0.1}} {{ge .neg 0}} {{lt .kind "D"}} {{lt .big 1}}`,
	`{{lt .flag true}}`, `{{lt .nope 1}}`, `{{lt .readyMembers 1.5}}`, `{{gt .members 1}}`, `{{le 1 1}} {{ge "a" "b"}}`,
	`{{lt (index .kind 0) 100}} {{eq (index .kind 0) 67}}`,
	`{{base64decode .secret}}`, `{{base64decode .kind}}`, `{{base64decode .readyMembers}}`, `{{base64decode .nope}}`, `{{.secret | base64decode}}`,
	`{{exists . "metadata" "name"}} {{exists . "metadata" "none"}} {{exists . "members" 1 "name"}} {{exists . "members" 3}}`,
	`{{exists . "members" 9}} {{exists . "nothing"}} {{exists .nope}} {{exists . "kind" 0}} {{exists . "kind" 0 1}} {{exists . 1}}`,
	`{{exists .members "x"}} {{exists . "members" "0"}} {{exists . "members" 1.0}} {{exists . nil}}`,
	`{{call .kind}}`, `{{call .nope}}`, `{{nosuch}}`, `{{.kind | len | printf "%03d"}}`, `{{len .kind | lt 3}}`,
	`{{if and (eq .kind "ClusterStatus") (gt .readyMembers 1)}}ok{{end}}`,
	`{{range .verdict.reasons}}{{.code}}{{if .member}} ({{.member}}){{end}}: {{.detail}}{{"\n"}}{{end}}`,
	`{{.unicode}} {{printf "%x" .unicode}} {{len .unicode}} {{index .unicode 1}}`,
	`{{$x := 1}}{{$x.y}}`, `{{$.nope.x}}`, `{{with $y := .metadata}}{{$y.name}}{{end}}`,
	`{{range $i, $v := .l}}{{$i}}:{{$v}};{{end}}`,
	`{{$m := index .members 2}}{{$m.probe.ms}}`, `{{define "u"}}{{$.kind}}{{end}}{{template "u" .metadata}}`,
	`{{or .nope}}`, `{{printf "%v" (index .members 3)}}`, `{{range .nested}}{{range .}}{{if eq . 2}}{{break}}{{end}}{{.}}{{end}};{{end}}`,
	`{{range .m}}{{break}}{{else}}e{{end}}`, `{{$u := .nope}}{{$u.x}}`, `{{with .members}}{{index . 0 "name"}}{{end}}`,
	`{{(index .l 4).k}}`, `{{(index .l 3).k}}`, `{{index .l 3 "k"}}`, `{{slice .l 1 3 4}}`, `{{len (slice .l 1)}}`,
	`{{range $v := .m}}{{$v}}{{end}}`, `{{range $i, $v := .n}}{{end}}`, `{{.m.a | printf "%d"}}`, `{{printf "%d" .m.a}}`,
	`{{eq .n 3}} {{lt .n 4}} {{eq .l .l}}`, `{{.members | len}}`, `{{if}}{{end}}`, `{{range .l}}{{if .}}{{.}}{{end}}{{end}}`,
	`{{with index .members 0}}{{.name}}{{end}}`, `{{.metadata.labels.team | eq "db"}}`, `{{"x" | eq "x" "y"}}`,
	`{{index .m "a" | printf "%v"}}`, `{{html}}`, `{{print}}`, `{{len}}`, `{{not 1 2}}`, `{{.kind | not}}`,
	`{{if index .s 0}}byte{{end}} {{range index .s 0}}.{{end}} {{range $i := index .kind 0}}{{end}}`,
}

// TestSameOutputAsKubectlsTemplatePrinter runs every template on every
// document through kubectl's Go template printer (cli-runtime's, on
// text/template) and through this package, with missing keys allowed
// and not: where kubectl prints, the output is byte for byte the same;
// where kubectl fails, so does this package.
func TestSameOutputAsKubectlsTemplatePrinter(t *testing.T) {
	counts := map[outcome]int{}
	for di, raw := range documents {
		doc := decode(t, raw)
		for _, text := range templates {
			for _, allowMissing := range []bool{true, false} {
				o, why := compare(doc, text, allowMissing)
				if o == differ {
					t.Errorf("document %d, missing keys allowed %v, template %s: %s", di, allowMissing, text, why)
				}
				counts[o]++
			}
		}
	}
	t.Logf("%d outputs identical, %d failures alike, %d templates that do not parse", counts[same], counts[bothFail], counts[noParse])
	if counts[same] < 300 || counts[bothFail] < 50 {
		t.Errorf("the corpus compares too little: %v", counts)
	}
}

// FuzzSameOutputAsKubectl compares the two on templates the fuzzer
// writes (go test -fuzz FuzzSameOutputAsKubectl ./internal/gotemplate);
// without -fuzz it runs the corpus above.
func FuzzSameOutputAsKubectl(f *testing.F) {
	for _, text := range templates {
		f.Add(text, true)
	}
	docs := make([]map[string]any, len(documents))
	for i, raw := range documents {
		docs[i] = decode(f, raw)
	}
	f.Fuzz(func(t *testing.T, text string, allowMissing bool) {
		for di, doc := range docs {
			if o, why := compare(doc, text, allowMissing); o == differ {
				t.Errorf("document %d, missing keys allowed %v, template %q: %s", di, allowMissing, text, why)
			}
		}
	})
}

func decode(t testing.TB, raw string) map[string]any {
	doc := map[string]any{}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("document %s: %v", raw, err)
	}
	return doc
}

type outcome int

const (
	same outcome = iota
	bothFail
	noParse
	differ
)

// compare runs text on doc through kubectl's printer and this package.
func compare(doc map[string]any, text string, allowMissing bool) (outcome, string) {
	var want bytes.Buffer
	ref, refParseErr := printers.NewGoTemplatePrinter([]byte(text))
	var refErr error
	if refParseErr == nil {
		ref.AllowMissingKeys(allowMissing)
		refErr = ref.PrintObj(&unstructured.Unstructured{Object: doc}, &want)
	}
	// What kubectl's printer executes on: the object encoded and decoded
	// again (a 0.0 comes back an integer).
	b, err := json.Marshal(doc)
	if err != nil {
		return differ, err.Error()
	}
	data := map[string]any{}
	if err := json.Unmarshal(b, &data); err != nil {
		return differ, err.Error()
	}
	var got bytes.Buffer
	tmpl, parseErr := gotemplate.Parse("output", text)
	if parseErr == nil {
		tmpl.MissingKeyError(!allowMissing)
		err = tmpl.Execute(&got, data)
	}
	switch {
	case (refParseErr == nil) != (parseErr == nil):
		return differ, fmt.Sprintf("parse: kubectl %v, here %v", refParseErr, parseErr)
	case refParseErr != nil:
		return noParse, ""
	case refErr != nil && err == nil:
		return differ, fmt.Sprintf("kubectl fails (%v), here it prints %q", refErr, got.String())
	case refErr == nil && err != nil:
		return differ, fmt.Sprintf("kubectl prints %q, here it fails: %v", want.String(), err)
	case refErr != nil:
		return bothFail, ""
	case got.String() != want.String():
		return differ, fmt.Sprintf("\nkubectl: %q\nhere:    %q", want.String(), got.String())
	}
	return same, ""
}

// TestErrorsSayWhere: an execution error names the template, its line
// and column, and what went wrong.
func TestErrorsSayWhere(t *testing.T) {
	tmpl, err := gotemplate.Parse("output", "line one\n{{.a.b}}")
	if err != nil {
		t.Fatal(err)
	}
	err = tmpl.Execute(&bytes.Buffer{}, map[string]any{"a": "text"})
	if err == nil || !strings.Contains(err.Error(), "output:2:") || !strings.Contains(err.Error(), "can't evaluate field b") {
		t.Fatalf("error = %v", err)
	}
	if _, err := gotemplate.Parse("output", "{{.a"); err == nil {
		t.Fatal("an unclosed action parsed")
	}
}

// TestDeepRecursionIsAnError: a template that calls itself forever ends
// with an error, not a crash.
func TestDeepRecursionIsAnError(t *testing.T) {
	tmpl, err := gotemplate.Parse("output", `{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.Execute(&bytes.Buffer{}, map[string]any{}); err == nil || !strings.Contains(err.Error(), "maximum template depth") {
		t.Fatalf("error = %v", err)
	}
}
