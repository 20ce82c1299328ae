package gotemplate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"text/template"
)

// builtin is a function templates may call: its parameters' kinds (the
// last repeated when variadic is set) and what it does.
type builtin struct {
	params   []kind
	variadic kind
	call     func(args []value) (value, error)
}

// builtins are text/template's functions and kubectl's two (exists,
// base64decode). call is named so a template that uses it parses, but a
// JSON document holds no function to call.
var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		"and":          {params: []kind{kindValue}, variadic: kindValue},
		"or":           {params: []kind{kindValue}, variadic: kindValue},
		"call":         {params: []kind{kindValue}, variadic: kindValue, call: callFn},
		"html":         {variadic: kindAny, call: escaper(template.HTMLEscapeString)},
		"js":           {variadic: kindAny, call: escaper(template.JSEscapeString)},
		"urlquery":     {variadic: kindAny, call: escaper(url.QueryEscape)},
		"index":        {params: []kind{kindValue}, variadic: kindValue, call: index},
		"slice":        {params: []kind{kindValue}, variadic: kindValue, call: slice},
		"len":          {params: []kind{kindValue}, call: length},
		"not":          {params: []kind{kindValue}, call: func(a []value) (value, error) { return val(!truth(a[0])), nil }},
		"print":        {variadic: kindAny, call: func(a []value) (value, error) { return val(fmt.Sprint(anys(a)...)), nil }},
		"println":      {variadic: kindAny, call: func(a []value) (value, error) { return val(fmt.Sprintln(anys(a)...)), nil }},
		"printf":       {params: []kind{kindString}, variadic: kindAny, call: printf},
		"eq":           {params: []kind{kindValue}, variadic: kindValue, call: eqFn},
		"ne":           {params: []kind{kindValue, kindValue}, call: compare(ne)},
		"lt":           {params: []kind{kindValue, kindValue}, call: compare(lt)},
		"le":           {params: []kind{kindValue, kindValue}, call: compare(le)},
		"gt":           {params: []kind{kindValue, kindValue}, call: compare(gt)},
		"ge":           {params: []kind{kindValue, kindValue}, call: compare(ge)},
		"exists":       {params: []kind{kindAny}, variadic: kindAny, call: exists},
		"base64decode": {params: []kind{kindString}, call: base64decode},
	}
}

func anys(a []value) []any {
	out := make([]any, len(a))
	for i, x := range a {
		out[i] = x.v
	}
	return out
}

// truth is text/template's truth of a function's argument.
func truth(x value) bool {
	t, _ := isTrue(x)
	return t
}

func callFn(a []value) (value, error) {
	if !a[0].ok || a[0].v == nil {
		return missing, errors.New("call of nil")
	}
	return missing, fmt.Errorf("non-function of type %T", a[0].v)
}

// escaper is html, js and urlquery: one string argument as it is, more
// (or another kind) through fmt.Sprint first, a nil as "<no value>".
func escaper(esc func(string) string) func([]value) (value, error) {
	return func(a []value) (value, error) {
		if len(a) == 1 {
			if s, ok := a[0].v.(string); ok {
				return val(esc(s)), nil
			}
		}
		args := anys(a)
		for i, x := range args {
			if x == nil {
				// text/template prints a nil argument here as it
				// prints the invalid value.
				args[i] = "<no value>"
			}
		}
		return val(esc(fmt.Sprint(args...))), nil
	}
}

func printf(a []value) (value, error) {
	return val(fmt.Sprintf(a[0].v.(string), anys(a[1:])...)), nil
}

func base64decode(a []value) (value, error) {
	b, err := base64.StdEncoding.DecodeString(a[0].v.(string))
	if err != nil {
		return missing, fmt.Errorf("base64 decode failed: %v", err)
	}
	return val(string(b)), nil
}

// unheld is x seen through its interface: a null becomes the invalid
// value (text/template's indirectInterface).
func unheld(x value) value {
	x = x.concrete()
	return x
}

// intOf reads an integer index.
func intOf(x value, what string) (int64, error) {
	switch n := x.v.(type) {
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case uint8:
		return int64(n), nil
	}
	if !x.ok {
		return 0, fmt.Errorf("cannot index %s with nil", what)
	}
	return 0, fmt.Errorf("cannot index %s with type %s", what, typeName(value{v: x.v, ok: true}))
}

func indexArg(x value, limit int) (int, error) {
	i, err := intOf(x, "slice/array")
	if err != nil {
		return 0, err
	}
	if i < 0 || int(i) < 0 || int(i) > limit {
		return 0, fmt.Errorf("index out of range: %d", i)
	}
	return int(i), nil
}

func index(a []value) (value, error) {
	item := unheld(a[0])
	if !item.ok {
		return missing, errors.New("index of untyped nil")
	}
	for _, ix := range a[1:] {
		ix = unheld(ix)
		if item.v == nil {
			return missing, errors.New("index of nil pointer")
		}
		switch v := item.v.(type) {
		case []any:
			i, err := indexArg(ix, len(v))
			if err != nil {
				return missing, err
			}
			if i >= len(v) {
				return missing, fmt.Errorf("reflect: slice index out of range")
			}
			item = heldVal(v[i])
		case string:
			i, err := indexArg(ix, len(v))
			if err != nil {
				return missing, err
			}
			if i >= len(v) {
				return missing, fmt.Errorf("reflect: string index out of range")
			}
			item = val(v[i])
		case map[string]any:
			if !ix.ok {
				return missing, errors.New("value is nil; should be of type string")
			}
			key, ok := ix.v.(string)
			if !ok {
				return missing, fmt.Errorf("value has type %s; should be string", typeName(value{v: ix.v, ok: true}))
			}
			item = heldVal(v[key])
		default:
			return missing, fmt.Errorf("can't index item of type %s", typeName(value{v: item.v, ok: true}))
		}
	}
	return item, nil
}

func slice(a []value) (value, error) {
	item := unheld(a[0])
	if !item.ok {
		return missing, errors.New("slice of untyped nil")
	}
	ixs := a[1:]
	if len(ixs) > 3 {
		return missing, fmt.Errorf("too many slice indexes: %d", len(ixs))
	}
	var n int
	switch v := item.v.(type) {
	case string:
		if len(ixs) == 3 {
			return missing, errors.New("cannot 3-index slice a string")
		}
		n = len(v)
	case []any:
		n = len(v)
	default:
		return missing, fmt.Errorf("can't slice item of type %s", typeName(value{v: item.v, ok: true}))
	}
	idx := [3]int{0, n, n}
	for i, x := range ixs {
		if x.held {
			// text/template does not look through the interface here.
			return missing, errors.New("cannot index slice/array with type interface {}")
		}
		j, err := indexArg(x, n)
		if err != nil {
			return missing, err
		}
		idx[i] = j
	}
	if idx[0] > idx[1] {
		return missing, fmt.Errorf("invalid slice index: %d > %d", idx[0], idx[1])
	}
	if len(ixs) == 3 && idx[1] > idx[2] {
		return missing, fmt.Errorf("invalid slice index: %d > %d", idx[1], idx[2])
	}
	switch v := item.v.(type) {
	case string:
		return val(v[idx[0]:idx[1]]), nil
	default:
		l := v.([]any)
		return val(l[idx[0]:idx[1]:idx[2]]), nil
	}
}

func length(a []value) (value, error) {
	x := a[0]
	if x.ok && x.v == nil {
		return missing, errors.New("len of nil pointer")
	}
	switch v := x.v.(type) {
	case []any:
		return val(len(v)), nil
	case map[string]any:
		return val(len(v)), nil
	case string:
		return val(len(v)), nil
	}
	if !x.ok {
		return missing, errors.New("len of untyped nil")
	}
	return missing, fmt.Errorf("len of type %T", x.v)
}

// basic is text/template's comparison kind.
type basic int

const (
	invalidKind basic = iota
	boolKind
	complexKind
	intKind
	floatKind
	stringKind
	uintKind
)

var errBadComparisonType = errors.New("invalid type for comparison")

func basicKind(x value) basic {
	switch x.v.(type) {
	case bool:
		return boolKind
	case int, int64:
		return intKind
	case uint8:
		return uintKind
	case float64:
		return floatKind
	case complex128:
		return complexKind
	case string:
		return stringKind
	}
	return invalidKind
}

func asInt(x value) int64 {
	switch n := x.v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	}
	return 0
}

func asUint(x value) uint64 {
	if n, ok := x.v.(uint8); ok {
		return uint64(n)
	}
	return 0
}

// isNilValue: the invalid value or a null.
func isNilValue(x value) bool { return !x.ok || x.v == nil }

func eqFn(a []value) (value, error) {
	if len(a) < 2 {
		return missing, errors.New("missing argument for comparison")
	}
	arg1 := unheld(a[0])
	k1 := basicKind(arg1)
	for _, arg := range a[1:] {
		arg = unheld(arg)
		k2 := basicKind(arg)
		truth := false
		if k1 != k2 {
			switch {
			case k1 == intKind && k2 == uintKind:
				truth = asInt(arg1) >= 0 && uint64(asInt(arg1)) == asUint(arg)
			case k1 == uintKind && k2 == intKind:
				truth = asInt(arg) >= 0 && asUint(arg1) == uint64(asInt(arg))
			default:
				if arg1.ok && arg.ok {
					return missing, fmt.Errorf("incompatible types for comparison: %T and %T", arg1.v, arg.v)
				}
			}
		} else {
			switch k1 {
			case boolKind, complexKind, floatKind, stringKind:
				truth = arg1.v == arg.v
			case intKind:
				truth = asInt(arg1) == asInt(arg)
			case uintKind:
				truth = asUint(arg1) == asUint(arg)
			default:
				// Lists, maps and nulls: only a null equals a null.
				if !isNilValue(arg1) && !isNilValue(arg) {
					return missing, fmt.Errorf("non-comparable types %T and %T", arg1.v, arg.v)
				}
				truth = isNilValue(arg) == isNilValue(arg1)
			}
		}
		if truth {
			return val(true), nil
		}
	}
	return val(false), nil
}

func ne(a, b value) (bool, error) {
	eq, err := eqFn([]value{a, b})
	if err != nil {
		return false, err
	}
	return !eq.v.(bool), nil
}

func lt(a, b value) (bool, error) {
	a, b = unheld(a), unheld(b)
	k1, k2 := basicKind(a), basicKind(b)
	if k1 == invalidKind || k2 == invalidKind {
		return false, errBadComparisonType
	}
	if k1 != k2 {
		switch {
		case k1 == intKind && k2 == uintKind:
			return asInt(a) < 0 || uint64(asInt(a)) < asUint(b), nil
		case k1 == uintKind && k2 == intKind:
			return asInt(b) >= 0 && asUint(a) < uint64(asInt(b)), nil
		}
		return false, fmt.Errorf("incompatible types for comparison: %T and %T", a.v, b.v)
	}
	switch k1 {
	case floatKind:
		return a.v.(float64) < b.v.(float64), nil
	case intKind:
		return asInt(a) < asInt(b), nil
	case stringKind:
		return a.v.(string) < b.v.(string), nil
	case uintKind:
		return asUint(a) < asUint(b), nil
	}
	return false, errBadComparisonType
}

func le(a, b value) (bool, error) {
	less, err := lt(a, b)
	if less || err != nil {
		return less, err
	}
	eq, err := eqFn([]value{a, b})
	if err != nil {
		return false, err
	}
	return eq.v.(bool), nil
}

func gt(a, b value) (bool, error) {
	lessOrEqual, err := le(a, b)
	if err != nil {
		return false, err
	}
	return !lessOrEqual, nil
}

func ge(a, b value) (bool, error) {
	less, err := lt(a, b)
	if err != nil {
		return false, err
	}
	return !less, nil
}

func compare(f func(a, b value) (bool, error)) func([]value) (value, error) {
	return func(a []value) (value, error) {
		t, err := f(a[0], a[1])
		if err != nil {
			return missing, err
		}
		return val(t), nil
	}
}

// exists is kubectl's: whether item holds a non-null value at the
// indices given (list positions, map keys).
func exists(a []value) (value, error) {
	v := a[0].v
	for _, ix := range a[1:] {
		switch x := v.(type) {
		case []any:
			i, err := intOf(ix, "")
			if err != nil || i < 0 || i >= int64(len(x)) || x[i] == nil {
				return val(false), nil
			}
			v = x[i]
		case string:
			i, err := intOf(ix, "")
			if err != nil || i < 0 || i >= int64(len(x)) {
				return val(false), nil
			}
			v = x[i]
		case map[string]any:
			key := ""
			if ix.v != nil {
				k, ok := ix.v.(string)
				if !ok {
					return val(false), nil
				}
				key = k
			}
			if x[key] == nil {
				return val(false), nil
			}
			v = x[key]
		default:
			return val(false), nil
		}
	}
	return val(true), nil
}
