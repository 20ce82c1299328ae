package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/hactl-dev/hactl/status"
)

// The output forms status prints itself, beside cli-runtime's printers:
// -o name, -o custom-columns=SPEC and -o custom-columns-file=FILE, as
// kubectl get prints them.

// column is one custom column: its header and its JSONPath.
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
		if len(lines) != 2 {
			return nil, fmt.Errorf("the custom columns file %s must hold two lines, the headers and their JSONPaths (it holds %d)", spec, len(lines))
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
	for i := range headers {
		expr := paths[i]
		if !strings.HasPrefix(expr, "{") {
			expr = "{" + expr + "}"
		}
		jp := jsonpath.New(headers[i]).AllowMissingKeys(true)
		if err := jp.Parse(expr); err != nil {
			return nil, fmt.Errorf("custom column %s: %q is not a JSONPath: %v", headers[i], paths[i], err)
		}
		cols[i] = customColumn{header: headers[i], path: jp}
	}
	return cols, nil
}

// docMap is a cluster's status document as the JSON map JSONPath reads.
func docMap(cs *status.ClusterStatus) (any, error) {
	b, err := json.Marshal(cs)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(b, &v)
}

// pathValue is what path yields on doc, printed as kubectl prints a
// custom column ("<none>" when nothing).
func pathValue(path *jsonpath.JSONPath, doc any) (string, error) {
	rs, err := path.FindResults(doc)
	if err != nil {
		return "", err
	}
	var vals []string
	for _, r := range rs {
		for _, v := range r {
			if !v.IsValid() || (v.Kind() == 0) {
				continue
			}
			x := v.Interface()
			switch t := x.(type) {
			case nil:
				continue
			case string:
				vals = append(vals, t)
			case float64:
				vals = append(vals, strconv.FormatFloat(t, 'f', -1, 64))
			case bool:
				vals = append(vals, strconv.FormatBool(t))
			default:
				b, _ := json.Marshal(t)
				vals = append(vals, string(b))
			}
		}
	}
	if len(vals) == 0 {
		return "<none>", nil
	}
	return strings.Join(vals, ","), nil
}

// printCustomColumns prints one row per cluster.
func printCustomColumns(w io.Writer, docs []*status.ClusterStatus, cols []customColumn, noHeaders bool) error {
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
// StatefulSet.
func printNames(w io.Writer, docs []*status.ClusterStatus) error {
	for _, cs := range docs {
		if _, err := fmt.Fprintf(w, "statefulset.apps/%s\n", cs.Metadata.Name); err != nil {
			return err
		}
	}
	return nil
}

// sortDocs orders docs by what expr (--sort-by, a JSONPath such as
// .metadata.name or '{.verdict.failoverReady}') yields on each: numbers
// by value, anything else as text; ties keep their order.
func sortDocs(docs []*status.ClusterStatus, expr string) error {
	if expr == "" {
		return nil
	}
	e := expr
	if !strings.HasPrefix(e, "{") {
		e = "{" + e + "}"
	}
	jp := jsonpath.New("sort-by").AllowMissingKeys(true)
	if err := jp.Parse(e); err != nil {
		return usageError("--sort-by %q is not a JSONPath: %v", expr, err)
	}
	keys := make(map[*status.ClusterStatus]string, len(docs))
	for _, cs := range docs {
		doc, err := docMap(cs)
		if err != nil {
			return err
		}
		if keys[cs], err = pathValue(jp, doc); err != nil {
			return usageError("--sort-by %q: %v", expr, err)
		}
	}
	slices.SortStableFunc(docs, func(a, b *status.ClusterStatus) int {
		x, y := keys[a], keys[b]
		fx, ex := strconv.ParseFloat(x, 64)
		fy, ey := strconv.ParseFloat(y, 64)
		if ex == nil && ey == nil {
			switch {
			case fx < fy:
				return -1
			case fx > fy:
				return 1
			}
			return 0
		}
		return strings.Compare(x, y)
	})
	return nil
}
