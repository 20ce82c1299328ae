package actions_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/model"
)

// optionLeaf is one field of model.ActionOptions (a nested struct's fields
// one by one), by its Go path, with a setter to a non-zero value.
type optionLeaf struct {
	path string
	set  func(o *model.ActionOptions)
}

// optionLeaves lists every field of model.ActionOptions, walking into
// nested structs and pointers to structs.
func optionLeaves(t *testing.T) []optionLeaf {
	t.Helper()
	var out []optionLeaf
	timeType := reflect.TypeOf(time.Time{})
	var walk func(prefix string, typ reflect.Type, get func(o *model.ActionOptions) reflect.Value)
	walk = func(prefix string, typ reflect.Type, get func(o *model.ActionOptions) reflect.Value) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				// Not saved with a plan (model.VerdictOptions.Rules: the
				// engines' rules this process hands in).
				continue
			}
			path, ft := prefix+f.Name, f.Type
			field := func(o *model.ActionOptions) reflect.Value { return get(o).Field(i) }
			switch {
			case ft.Kind() == reflect.Struct && ft != timeType:
				walk(path+".", ft, field)
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && ft.Elem() != timeType:
				walk(path+".", ft.Elem(), func(o *model.ActionOptions) reflect.Value {
					v := field(o)
					if v.IsNil() {
						v.Set(reflect.New(ft.Elem()))
					}
					return v.Elem()
				})
			default:
				out = append(out, optionLeaf{path: path, set: func(o *model.ActionOptions) { setNonZero(t, path, field(o)) }})
			}
		}
	}
	walk("", reflect.TypeOf(model.ActionOptions{}), func(o *model.ActionOptions) reflect.Value { return reflect.ValueOf(o).Elem() })
	return out
}

func setNonZero(t *testing.T, path string, v reflect.Value) {
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		v.SetInt(int64(7 * time.Second))
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("edited")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() == 0 {
			v.SetInt(7)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Struct:
	default:
		t.Fatalf("model.ActionOptions.%s is a %s: teach this test to set it (and make sure a plan shows and compares it)", path, v.Type())
	}
}

// TestPlanDiffComparesEveryOption: every field of the intent's options
// (nested thresholds included) is part of what a saved plan shows and
// what apply compares, unless it is one of the documented exceptions:
// set in the plan only, or in the decision made now only, each one is
// named. A field added to model.ActionOptions later is compared as it is,
// or this test fails until it is listed as an exception.
func TestPlanDiffComparesEveryOption(t *testing.T) {
	excluded := map[string]bool{}
	for _, f := range actions.PlanOptionsNotCompared {
		excluded[f] = true
	}
	leaves := optionLeaves(t)
	if len(leaves) < 10 {
		t.Fatalf("only %d option fields found: %v", len(leaves), leaves)
	}
	for _, l := range leaves {
		t.Run(l.path, func(t *testing.T) {
			top, _, _ := strings.Cut(l.path, ".")
			edited := planned()
			l.set(&edited.Intent.Options)
			for _, c := range []struct {
				which     string
				plan, now model.Decision
			}{
				{"set in the plan", edited, planned()},
				{"set now", planned(), edited},
			} {
				got := actions.PlanDiff(roundTrip(t, c.plan), roundTrip(t, c.now))
				switch {
				case excluded[top] && len(got) != 0:
					t.Errorf("%s: %s is documented as not compared, but PlanDiff names %q", c.which, l.path, got)
				case !excluded[top] && len(got) == 0:
					t.Errorf("%s: model.ActionOptions.%s is neither shown and compared by a saved plan nor listed in actions.PlanOptionsNotCompared", c.which, l.path)
				}
			}
		})
	}
	for _, f := range actions.PlanOptionsNotCompared {
		if _, ok := reflect.TypeOf(model.ActionOptions{}).FieldByName(f); !ok {
			t.Errorf("actions.PlanOptionsNotCompared lists %q, which is not a field of model.ActionOptions", f)
		}
	}
}

// withLags sets the decision's quorum lags (voter name: entries behind
// the leader) and threshold, through its JSON as a saved plan carries
// them.
func withLags(t *testing.T, d model.Decision, threshold uint64, lags map[string]int64) model.Decision {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["quorum"].(map[string]any)["lags"] = lags
	opts := m["intent"].(map[string]any)["options"].(map[string]any)
	opts["verdict"] = map[string]any{"lagThreshold": threshold}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	var out model.Decision
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPlanDiffComparesObservedLags: the quorum is compared by the lags
// observed, not only by its verdicts: a voter within the lag threshold
// when the plan was made that trails the leader by more now is named,
// even where the quorum's booleans came out the same (a threshold
// raised by an edit). A lag that moves within the threshold is not a
// change.
func TestPlanDiffComparesObservedLags(t *testing.T) {
	planLags := map[string]int64{"etcd-0": 0, "etcd-1": 2, "etcd-2": 5}
	for _, c := range []struct {
		name                  string
		planThreshold, nowThr uint64
		now                   map[string]int64
		want                  string
	}{
		{"a voter lags now", 1000, 1000, map[string]int64{"etcd-0": 0, "etcd-1": 3, "etcd-2": 5000}, "etcd-2 now trails the leader by 5000 entries"},
		{"the plan's threshold raised", 1 << 62, 1000, map[string]int64{"etcd-0": 0, "etcd-1": 3, "etcd-2": 5000}, "etcd-2 now trails the leader by 5000 entries"},
		{"lags move within the threshold", 1000, 1000, map[string]int64{"etcd-0": 0, "etcd-1": 900, "etcd-2": 40}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := withLags(t, planned(), c.planThreshold, planLags)
			now := withLags(t, planned(), c.nowThr, c.now)
			got := strings.Join(actions.PlanDiff(plan, now), "\n")
			if c.want == "" && got != "" && !strings.Contains(got, "lag threshold") {
				t.Errorf("refused: %s", got)
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("changes %q do not name %q", got, c.want)
			}
		})
	}
}
