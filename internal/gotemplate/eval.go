package gotemplate

import (
	"fmt"
	"io"
	"strings"
	"text/template/parse"
)

func (s *state) evalFieldChain(dot, receiver value, node parse.Node, ident []string, args []parse.Node, f final) value {
	s.at(node)
	n := len(ident)
	for i := 0; i < n-1; i++ {
		receiver = s.evalField(ident[i], nil, final{}, receiver)
	}
	return s.evalField(ident[n-1], args, f, receiver)
}

// evalField reads field name of receiver: a map's key. A JSON document
// has no methods and no structs.
func (s *state) evalField(name string, args []parse.Node, f final, receiver value) value {
	if !receiver.ok {
		if s.t.missingErr {
			s.errorf("nil data; no entry for key %q", name)
		}
		return missing
	}
	if receiver.v == nil {
		s.errorf("nil pointer evaluating interface {}.%s", name)
	}
	m, isMap := receiver.v.(map[string]any)
	if !isMap {
		s.errorf("can't evaluate field %s in type %s", name, typeName(receiver))
	}
	if len(args) > 1 || f.piped {
		s.errorf("%s is not a method but has arguments", name)
	}
	x, found := m[name]
	if !found {
		if s.t.missingErr {
			s.errorf("map has no entry for key %q", name)
		}
		return missing
	}
	return heldVal(x)
}

// typeName is the type text/template names in its messages.
func typeName(x value) string {
	switch {
	case !x.ok:
		return "<nil>"
	case x.held:
		return "interface {}"
	case x.v == nil:
		return "interface {}"
	}
	return fmt.Sprintf("%T", x.v)
}

func (s *state) evalChain(dot value, chain *parse.ChainNode, args []parse.Node, f final) value {
	s.at(chain)
	if len(chain.Field) == 0 {
		s.errorf("internal error: no fields in evalChainNode")
	}
	if chain.Node.Type() == parse.NodeNil {
		s.errorf("indirection through explicit nil in %s", chain)
	}
	pipe := s.evalArg(dot, kindValue, chain.Node)
	return s.evalFieldChain(dot, pipe, chain, chain.Field, args, f)
}

func (s *state) evalVariable(dot value, v *parse.VariableNode, args []parse.Node, f final) value {
	s.at(v)
	x := s.varValue(v.Ident[0])
	if len(v.Ident) == 1 {
		s.notAFunction(args, f)
		return x
	}
	return s.evalFieldChain(dot, x, v, v.Ident[1:], args, f)
}

func (s *state) evalFunction(dot value, node *parse.IdentifierNode, args []parse.Node, f final) value {
	s.at(node)
	fn, ok := builtins[node.Ident]
	if !ok {
		s.errorf("%q is not a defined function", node.Ident)
	}
	return s.evalCall(dot, fn, node, node.Ident, args, f)
}

// evalCall calls builtin fn; args[0] is the function's own node (args is
// nil for a function named bare as an argument).
func (s *state) evalCall(dot value, fn builtin, node parse.Node, name string, args []parse.Node, f final) value {
	if args != nil {
		args = args[1:]
	}
	numIn := len(args)
	if f.piped {
		numIn++
	}
	numFixed := len(args)
	if fn.variadic != kindNone {
		numFixed = len(fn.params)
		if numIn < numFixed {
			s.errorf("wrong number of args for %s: want at least %d got %d", name, len(fn.params), len(args))
		}
	} else if numIn != len(fn.params) {
		s.errorf("wrong number of args for %s: want %d got %d", name, len(fn.params), numIn)
	}
	if name == "and" || name == "or" {
		var v value
		for _, a := range args {
			v = s.evalArg(dot, kindValue, a)
			if truth(v) == (name == "or") {
				return v
			}
		}
		if f.piped {
			v = f.v
		}
		return v
	}
	argv := make([]value, numIn)
	i := 0
	for ; i < numFixed && i < len(args); i++ {
		argv[i] = s.evalArg(dot, fn.params[i], args[i])
	}
	if fn.variadic != kindNone {
		for ; i < len(args); i++ {
			argv[i] = s.evalArg(dot, fn.variadic, args[i])
		}
	}
	if f.piped {
		k := kindNone
		switch {
		case fn.variadic == kindNone:
			k = fn.params[len(fn.params)-1]
		case numIn-1 < numFixed:
			k = fn.params[numIn-1]
		default:
			k = fn.variadic
		}
		argv[i] = s.validate(f.v, k)
	}
	v, err := fn.call(argv)
	if err != nil {
		s.at(node)
		s.errorf("error calling %s: %w", name, err)
	}
	return v
}

// kind is what a builtin's parameter takes, as text/template converts
// arguments for it.
type kind int

const (
	kindNone kind = iota
	// kindValue: any value, the invalid one included (a reflect.Value
	// parameter).
	kindValue
	// kindAny: any value; the invalid one arrives as nil (an interface{}
	// parameter).
	kindAny
	// kindString: a string.
	kindString
)

func (s *state) evalArg(dot value, k kind, n parse.Node) value {
	s.at(n)
	switch a := n.(type) {
	case *parse.DotNode:
		return s.validate(dot, k)
	case *parse.NilNode:
		switch k {
		case kindValue:
			return missing
		case kindAny:
			return val(nil)
		}
		s.errorf("cannot assign nil to string")
	case *parse.FieldNode:
		return s.validate(s.evalFieldChain(dot, dot, a, a.Ident, []parse.Node{n}, final{}), k)
	case *parse.VariableNode:
		return s.validate(s.evalVariable(dot, a, nil, final{}), k)
	case *parse.PipeNode:
		return s.validate(s.evalPipeline(dot, a), k)
	case *parse.IdentifierNode:
		return s.validate(s.evalFunction(dot, a, nil, final{}), k)
	case *parse.ChainNode:
		return s.validate(s.evalChain(dot, a, nil, final{}), k)
	}
	if k == kindString {
		if str, ok := n.(*parse.StringNode); ok {
			return val(str.Text)
		}
		s.errorf("expected string; found %s", n)
	}
	switch a := n.(type) {
	case *parse.BoolNode:
		return val(a.True)
	case *parse.NumberNode:
		return s.number(a)
	case *parse.StringNode:
		return val(a.Text)
	}
	s.errorf("can't handle assignment of %s to empty interface argument", n)
	return missing
}

// validate converts x for a parameter of kind k, or fails as
// text/template does.
func (s *state) validate(x value, k kind) value {
	switch k {
	case kindValue:
		return x
	case kindAny:
		if !x.ok {
			return val(nil)
		}
		return x
	case kindString:
		if !x.ok {
			s.errorf("invalid value; expected string")
		}
		if str, ok := x.v.(string); ok {
			return val(str)
		}
		s.errorf("wrong type for value; expected string; got %s", typeName(value{v: x.v, ok: true}))
	}
	return x
}

// number is a numeric literal as text/template reads it: an int unless
// it is written as a float, a float64 then, or a complex128.
func (s *state) number(n *parse.NumberNode) value {
	s.at(n)
	switch {
	case n.IsComplex:
		return val(n.Complex128)
	case n.IsFloat && !isHexInt(n.Text) && !isRuneInt(n.Text) && strings.ContainsAny(n.Text, ".eEpP"):
		return val(n.Float64)
	case n.IsInt:
		i := int(n.Int64)
		if int64(i) != n.Int64 {
			s.errorf("%s overflows int", n.Text)
		}
		return val(i)
	case n.IsUint:
		s.errorf("%s overflows int", n.Text)
	}
	return missing
}

func isRuneInt(s string) bool { return len(s) > 0 && s[0] == '\'' }

func isHexInt(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
}

// print writes a pipeline's value as text/template does: "<no value>"
// for the invalid value, else fmt's %v.
func (s *state) print(n parse.Node, x value) {
	s.at(n)
	var err error
	if !x.ok {
		_, err = io.WriteString(s.w, "<no value>")
	} else {
		_, err = fmt.Fprint(s.w, x.v)
	}
	if err != nil {
		panic(execError{err})
	}
}
