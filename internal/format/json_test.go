package format

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestJSONProblemNamesNoGoType: the decoders' type errors, typed and as
// text (client-go's JSON fork), come out in a reader's words.
func TestJSONProblemNamesNoGoType(t *testing.T) {
	var v struct {
		Members []string `json:"members"`
		Lag     uint64   `json:"lag"`
		Delta   int8     `json:"delta"`
		Key     []byte   `json:"key"`
	}
	typed := json.Unmarshal([]byte(`{"members":"a"}`), &v)
	negative := json.Unmarshal([]byte(`{"lag":-1}`), &v)
	whole := json.Unmarshal([]byte(`"x"`), &v)
	small := json.Unmarshal([]byte(`{"delta":-200}`), &v)
	key := json.Unmarshal([]byte(`{"key":5}`), &v)
	for _, c := range []struct {
		err  error
		want string
	}{
		{typed, "field members holds text, where a manifest has a list"},
		{negative, "field lag holds the number -1, where a manifest has a whole number of 0 or more within range"},
		{whole, "the document holds text, where a manifest has fields"},
		{small, "field delta holds the number -200, where a manifest has a number within range"},
		{key, "field key holds a number, where a manifest has text"},
		{errors.New("error loading config file \"/x\": json: cannot unmarshal string into Go struct field Config.clusters of type []v1.NamedCluster"),
			"field clusters holds text, where a manifest has a list"},
		{errors.New("json: cannot unmarshal number into Go struct field Config.current-context of type string"),
			"field current-context holds a number, where a manifest has text"},
		{errors.New(`json: unknown field "colour"`), `unknown field "colour"`},
	} {
		got := JSONProblem(c.err, "a manifest")
		if got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.err, got, c.want)
		}
		if strings.Contains(got, "Go ") || strings.Contains(got, "[]") {
			t.Errorf("%q names a Go type", got)
		}
	}
}
