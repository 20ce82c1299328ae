package format

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// JSONProblem says what is wrong with a JSON document (doc: "the plan",
// "a manifest") in a reader's words: the decoders' messages name Go types
// ("cannot unmarshal string into Go struct field Config.clusters of type
// []v1.NamedCluster"). It reads encoding/json's typed errors, and the
// same messages from the decoders that only give text (client-go's JSON
// fork).
func JSONProblem(err error, doc string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return holds(te.Field, jsonWords(te.Value), goWords(te.Type), te.Value, doc, unsigned(te.Type))
	}
	msg := err.Error()
	if m := typeText.FindStringSubmatch(msg); m != nil {
		field := m[2]
		if i := strings.Index(field, "."); i >= 0 {
			field = field[i+1:] // "Config.clusters": the Go type, then the field
		}
		t := strings.TrimLeft(m[3], "*")
		return holds(field, jsonWords(m[1]), goTextWords(t), m[1], doc, strings.HasPrefix(t, "uint"))
	}
	if i := strings.LastIndex(msg, ": json: "); i >= 0 {
		return msg[i+len(": json: "):]
	}
	return strings.TrimPrefix(msg, "json: ")
}

// unsigned reports whether t holds a whole number of 0 or more.
func unsigned(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// typeText matches a type error given as text: the JSON value, the Go
// field (empty for the whole value) and the Go type.
var typeText = regexp.MustCompile(`cannot unmarshal (\w+(?: [^ ]+)?) into Go (?:struct field ([^ ]+)|value) of type (.+)$`)

// holds words a value of the wrong kind at field.
func holds(field, got, want, value, doc string, unsigned bool) string {
	where := "the document"
	if field != "" {
		where = "field " + field
	}
	if got == want && strings.HasPrefix(value, "number ") {
		// A number out of range: negative, fractional or too large.
		got, want = "the "+value, "a number within range"
		if unsigned {
			want = "a whole number of 0 or more within range"
		}
	}
	return fmt.Sprintf("%s holds %s, where %s has %s", where, got, doc, want)
}

// jsonWords names a JSON value kind as the decoder reports it.
func jsonWords(v string) string {
	switch {
	case v == "string":
		return "text"
	case v == "number" || strings.HasPrefix(v, "number "):
		return "a number"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "fields"
	}
	return v
}

// goWords names what a Go type holds.
func goWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "text" // bytes, as base64
		}
		return "a list"
	case reflect.Pointer:
		return goWords(t.Elem())
	}
	return "fields"
}

// goTextWords names what a Go type, given as text, holds.
func goTextWords(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case t == "string" || t == "[]uint8" || t == "[]byte":
		return "text"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || strings.HasPrefix(t, "float"):
		return "a number"
	}
	return "fields"
}
