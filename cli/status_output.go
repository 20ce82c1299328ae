package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/hactl-dev/hactl/internal/gotemplate"
	"github.com/hactl-dev/hactl/status"
)

// The output forms status prints itself, beside cli-runtime's printers:
// -o name, -o custom-columns=SPEC, -o custom-columns-file=FILE and the Go
// template forms, as kubectl get prints them.

// customColumn is one custom column: its header and its JSONPath.
type customColumn struct {
	header string
	path   *jsonpath.JSONPath
}

// customColumns reads -o custom-columns=HEADER:PATH,... or, with file,
// -o custom-columns-file=FILE (headers on its first line, paths on its
// second, each separated by spaces), as kubectl reads them.
func customColumns(spec string, file bool) ([]customColumn, error) {
	var headers, paths []string
	if file {
		b, err := os.ReadFile(spec)
		if err != nil {
			return nil, fmt.Errorf("reading the custom columns file: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < 2 || strings.TrimSpace(lines[0]) == "" {
			return nil, fmt.Errorf("the custom columns file %s must hold two lines, the headers and their JSONPaths", spec)
		}
		headers, paths = strings.Fields(lines[0]), strings.Fields(lines[1])
		if len(headers) != len(paths) {
			return nil, fmt.Errorf("the custom columns file %s names %d headers and %d JSONPaths", spec, len(headers), len(paths))
		}
	} else {
		if strings.TrimSpace(spec) == "" {
			return nil, fmt.Errorf("custom-columns needs HEADER:JSONPATH pairs, e.g. -o custom-columns=NAME:.metadata.name,READY:.verdict.failoverReady")
		}
		for _, part := range strings.Split(spec, ",") {
			h, p, ok := strings.Cut(part, ":")
			if !ok || h == "" || p == "" {
				return nil, fmt.Errorf("custom column %q is not HEADER:JSONPATH (e.g. NAME:.metadata.name)", part)
			}
			headers, paths = append(headers, h), append(paths, p)
		}
	}
	cols := make([]customColumn, len(headers))
	empty, err := docMap(&status.ClusterStatus{})
	if err != nil {
		return nil, err
	}
	for i := range headers {
		jp, err := relaxedPath(headers[i], paths[i])
		if err != nil {
			return nil, fmt.Errorf("custom column %s: %v", headers[i], err)
		}
		// A path that cannot be read on any document is refused before
		// anything is read from the cluster.
		if _, err := pathValues(jp, empty); err != nil {
			return nil, fmt.Errorf("custom column %s: %q: %v", headers[i], paths[i], err)
		}
		cols[i] = customColumn{header: headers[i], path: jp}
	}
	return cols, nil
}

// relaxedForm is how kubectl takes a JSONPath in custom columns and
// --sort-by: with or without braces, with or without the leading dot.
var relaxedForm = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxedPath parses expr as kubectl's RelaxedJSONPathExpression does.
func relaxedPath(name, expr string) (*jsonpath.JSONPath, error) {
	m := relaxedForm.FindStringSubmatch(expr)
	if m == nil {
		return nil, fmt.Errorf("%q is not a JSONPath (e.g. .metadata.name or {.verdict.failoverReady})", expr)
	}
	inner := m[1]
	if inner == "" {
		inner = m[2]
	}
	jp := jsonpath.New(name).AllowMissingKeys(true)
	if err := jp.Parse("{." + inner + "}"); err != nil {
		return nil, fmt.Errorf("%q is not a JSONPath: %v", expr, err)
	}
	return jp, nil
}

// docMap is a cluster's status document as the JSON map JSONPath reads.
func docMap(cs *status.ClusterStatus) (any, error) {
	b, err := json.Marshal(cs)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // positions are 64-bit: exact, not float64
	var v any
	return v, d.Decode(&v)
}

// pathValues are the values path yields on doc (nil and absent values
// left out).
func pathValues(path *jsonpath.JSONPath, doc any) ([]any, error) {
	rs, err := path.FindResults(doc)
	if err != nil {
		return nil, err
	}
	var vals []any
	for _, r := range rs {
		for _, v := range r {
			if !v.IsValid() {
				continue
			}
			if x := v.Interface(); x != nil {
				vals = append(vals, x)
			}
		}
	}
	return vals, nil
}

// text prints one value as kubectl prints a custom column's.
func text(x any) string {
	switch t := x.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// pathValue is what path yields on doc, as a custom column prints it
// ("<none>" when nothing; control characters escaped).
func pathValue(path *jsonpath.JSONPath, doc any) (string, error) {
	vals, err := pathValues(path, doc)
	if err != nil || len(vals) == 0 {
		return "<none>", err
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = printers.EscapeTerminal(text(v))
	}
	return strings.Join(out, ","), nil
}

// printCustomColumns prints one row per cluster.
func printCustomColumns(w io.Writer, docs []*status.ClusterStatus, cols []customColumn, noHeaders bool) error {
	if len(docs) == 0 {
		return nil // as kubectl get: nothing on stdout, "No … found" on stderr
	}
	tw := printers.GetNewTabWriter(w)
	if !noHeaders {
		hs := make([]string, len(cols))
		for i, c := range cols {
			hs[i] = c.header
		}
		fmt.Fprintln(tw, strings.Join(hs, "\t"))
	}
	for _, cs := range docs {
		doc, err := docMap(cs)
		if err != nil {
			return err
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			if row[i], err = pathValue(c.path, doc); err != nil {
				return fmt.Errorf("custom column %s: %v", c.header, err)
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// printNames prints each cluster as kubectl get -o name prints its
// StatefulSet (a cluster of static pods as its members' pods).
func printNames(w io.Writer, docs []*status.ClusterStatus) error {
	for _, cs := range docs {
		names := []string{"statefulset.apps/" + cs.Metadata.Name}
		if cs.Layout != "" && cs.Layout != "StatefulSet" {
			// No one object is the cluster (static pods): its members'
			// pods, so that kubectl can still be handed the names.
			names = names[:0]
			for _, m := range cs.Members {
				names = append(names, "pod/"+m.Name)
			}
		}
		for _, n := range names {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSortBy refuses a --sort-by path that does not parse or cannot be
// read on any document, before anything is read from the cluster.
func checkSortBy(expr string) error {
	jp, err := relaxedPath("sort-by", expr)
	if err != nil {
		return usageError("--sort-by: %v", err)
	}
	empty, err := docMap(&status.ClusterStatus{})
	if err != nil {
		return err
	}
	if _, err := pathValues(jp, empty); err != nil {
		return usageError("--sort-by %q: %v", expr, err)
	}
	return nil
}

// sortDocs orders docs as kubectl get --sort-by does, by the first value
// expr (a JSONPath such as .metadata.name or '{.readyMembers}') yields
// on each: documents without one first, then numbers by value, then
// anything else as text; ties keep their order. A path no document
// yields a value for is an error (a typo, most likely).
func sortDocs(docs []*status.ClusterStatus, expr string) error {
	if expr == "" || len(docs) == 0 {
		return nil
	}
	jp, err := relaxedPath("sort-by", expr)
	if err != nil {
		return usageError("--sort-by: %v", err)
	}
	keys := make(map[*status.ClusterStatus]any, len(docs))
	found := false
	for _, cs := range docs {
		doc, err := docMap(cs)
		if err != nil {
			return err
		}
		vals, err := pathValues(jp, doc)
		if err != nil {
			return usageError("--sort-by %q: %v", expr, err)
		}
		if len(vals) > 0 {
			keys[cs], found = vals[0], true
		}
	}
	if !found {
		return usageError("--sort-by %q: no cluster's status document has a value there (see -o json)", expr)
	}
	rank := func(x any) int {
		switch x.(type) {
		case nil:
			return 0
		case json.Number:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(docs, func(a, b *status.ClusterStatus) int {
		x, y := keys[a], keys[b]
		if r := cmp.Compare(rank(x), rank(y)); r != 0 || x == nil {
			return r
		}
		if nx, ok := x.(json.Number); ok {
			fx, _ := nx.Float64()
			fy, _ := y.(json.Number).Float64()
			return cmp.Compare(fx, fy)
		}
		return strings.Compare(text(x), text(y))
	})
	return nil
}

// goTemplateFormats are the -o forms kubectl takes for a Go template;
// the file forms name a file that holds it.
var goTemplateFormats = map[string]bool{"go-template": false, "template": false, "go-template-file": true, "templatefile": true}

// goTemplate is the printer for -o go-template=TEMPLATE,
// -o go-template-file=FILE (and kubectl's aliases template= and
// templatefile=, or the template in --template), executed by
// internal/gotemplate on the document as kubectl's Go template printer
// decodes it: the same output without text/template's reflection, which
// would cost the binary about 40 MB (docs/size.md). ok is false when f is
// not a Go template form.
func (o *StatusOptions) goTemplate(f string) (p printers.ResourcePrinter, ok bool, err error) {
	kind, text, hasText := strings.Cut(f, "=")
	file, known := goTemplateFormats[kind]
	if !known {
		return nil, false, nil
	}
	if o.Template != "" {
		text, hasText = o.Template, true
	}
	if !hasText || text == "" {
		return nil, true, fmt.Errorf("-o %s needs a template: -o %s=%s (or --template)", kind, kind, map[bool]string{false: "'{{.metadata.name}}'", true: "FILE"}[file])
	}
	if file {
		b, err := os.ReadFile(text)
		if err != nil {
			return nil, true, fmt.Errorf("reading the template file: %w", err)
		}
		text = string(b)
	}
	t, err := gotemplate.Parse("output", text)
	if err != nil {
		return nil, true, fmt.Errorf("the template does not parse: %w", err)
	}
	t.MissingKeyError(!o.AllowMissingKeys)
	return goTemplatePrinter{t}, true, nil
}

// goTemplatePrinter prints a document through a Go template. A template
// that fails prints nothing: kubectl would print what it had written
// before the failure, then the whole document.
type goTemplatePrinter struct{ t *gotemplate.Template }

// PrintObj implements printers.ResourcePrinter.
func (p goTemplatePrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	b, err := kjson.Marshal(obj)
	if err != nil {
		return err
	}
	// As kubectl's printer reads it: integers as int64, other numbers
	// as float64.
	data := map[string]any{}
	if err := kjson.Unmarshal(b, &data); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := p.t.Execute(&out, data); err != nil {
		return err
	}
	_, err = w.Write(out.Bytes())
	return err
}

// jsonPathFormats are the -o forms kubectl takes for a JSONPath; true
// for the one that names a file.
var jsonPathFormats = map[string]bool{"jsonpath": false, "jsonpath-as-json": false, "jsonpath-file": true}

// jsonPath is the printer for -o jsonpath=TEMPLATE, -o
// jsonpath-file=FILE and -o jsonpath-as-json=TEMPLATE (or the template
// in --template), cli-runtime's JSONPath printer as kubectl builds it.
// ok is false when f is not a JSONPath form.
func (o *StatusOptions) jsonPath(f string) (p printers.ResourcePrinter, ok bool, err error) {
	kind, text, _ := strings.Cut(f, "=")
	file, known := jsonPathFormats[kind]
	if !known {
		return nil, false, nil
	}
	if o.Template != "" {
		text = o.Template
	}
	if text == "" {
		return nil, true, fmt.Errorf("-o %s needs a template: -o %s=%s (or --template)", kind, kind, map[bool]string{false: "'{.metadata.name}'", true: "FILE"}[file])
	}
	if file {
		b, err := os.ReadFile(text)
		if err != nil {
			return nil, true, fmt.Errorf("reading the JSONPath file: %w", err)
		}
		text = string(b)
	}
	jp, err := printers.NewJSONPathPrinter(text)
	if err != nil {
		return nil, true, fmt.Errorf("error parsing jsonpath %s, %v", text, err)
	}
	jp.AllowMissingKeys(o.AllowMissingKeys)
	if kind == "jsonpath-as-json" {
		jp.EnableJSONOutput(true)
	}
	return jp, true, nil
}
