// Package gotemplate executes Go templates (text/template's language, as
// kubectl's -o go-template takes them) on decoded JSON documents, without
// reflection.
//
// text/template looks methods up by a name known only at run time
// (reflect.Value.MethodByName); once such a call is reachable, Go's linker
// keeps every exported method of every type that may end up in an
// interface, which costs kubectl-hactl about 40 MB. A JSON document has no
// methods: its values are maps, slices, strings, numbers, booleans and
// nil. This package walks the parse tree text/template/parse builds and
// evaluates it over those values only, with text/template's rules for
// fields, missing keys, truth, comparison, variables, range, with, define
// and template, and its built-in functions plus kubectl's exists and
// base64decode; the same template on the same document prints the same
// bytes (the tests compare the two).
package gotemplate

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/template/parse"
)

// Template is a parsed template and the templates it defines.
type Template struct {
	name       string
	trees      map[string]*parse.Tree
	missingErr bool
}

// Parse parses text as a template called name.
func Parse(name, text string) (*Template, error) {
	names := map[string]any{}
	for n := range builtins {
		names[n] = struct{}{}
	}
	trees, err := parse.Parse(name, text, "", "", names)
	if err != nil {
		return nil, err
	}
	return &Template{name: name, trees: trees}, nil
}

// MissingKeyError makes a missing map key an error
// (text/template's missingkey=error), as kubectl's
// --allow-missing-template-keys=false does; by default it prints
// "<no value>".
func (t *Template) MissingKeyError(on bool) { t.missingErr = on }

// maxDepth bounds nested template calls, as text/template's does.
const maxDepth = 100000

// Execute applies the template to data, a document as encoding/json (or
// k8s.io/apimachinery/pkg/util/json) decodes it into an any, and writes
// the output to w.
func (t *Template) Execute(w io.Writer, data any) (err error) {
	tree := t.trees[t.name]
	if tree == nil || tree.Root == nil {
		return fmt.Errorf("template: %s: no template %q", t.name, t.name)
	}
	dot := val(data)
	s := &state{t: t, w: w, tree: tree, vars: []variable{{"$", dot}}}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(execError)
			if !ok {
				panic(r)
			}
			err = e.err
		}
	}()
	s.walk(dot, tree.Root)
	return nil
}

// value is a template value: v as the document holds it. ok is false for
// text/template's invalid value (a missing key, a nil pipeline result),
// which prints as "<no value>"; a JSON null held in a map or a list is
// ok with v nil.
//
// held marks a value read out of a map or a list (text/template sees it
// through an empty interface) until a pipeline ends; only slice's indexes
// tell the two apart.
type value struct {
	v    any
	ok   bool
	held bool
}

func val(v any) value { return value{v: v, ok: true} }

func heldVal(v any) value { return value{v: v, ok: true, held: true} }

// missing is the invalid value.
var missing = value{}

// concrete is what a pipeline leaves: a null becomes the invalid value,
// as text/template's unwrapping of an empty interface does.
func (x value) concrete() value {
	if x.ok && x.v == nil {
		return missing
	}
	x.held = false
	return x
}

type variable struct {
	name string
	val  value
}

// execError carries an execution error up through the walk.
type execError struct{ err error }

// errBreak and errContinue end a range's iteration.
var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

type state struct {
	t     *Template
	w     io.Writer
	tree  *parse.Tree
	node  parse.Node
	vars  []variable
	depth int
}

func (s *state) errorf(format string, args ...any) {
	loc := s.t.name
	if s.node != nil && s.tree != nil {
		l, _ := s.tree.ErrorContext(s.node)
		loc = l
	}
	panic(execError{fmt.Errorf("template: %s: executing %q: %w", loc, s.tree.Name, fmt.Errorf(format, args...))})
}

func (s *state) at(n parse.Node) { s.node = n }

func (s *state) mark() int { return len(s.vars) }

func (s *state) pop(m int) { s.vars = s.vars[:m] }

func (s *state) push(name string, v value) { s.vars = append(s.vars, variable{name, v}) }

func (s *state) setVar(name string, v value) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			s.vars[i].val = v
			return
		}
	}
	s.errorf("undefined variable: %s", name)
}

func (s *state) setTopVar(n int, v value) { s.vars[len(s.vars)-n].val = v }

func (s *state) varValue(name string) value {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].val
		}
	}
	s.errorf("undefined variable: %s", name)
	return missing
}

// walk runs a node; a break or continue comes back as a panic of errBreak
// or errContinue, recovered by the range it ends.
func (s *state) walk(dot value, node parse.Node) {
	s.at(node)
	switch n := node.(type) {
	case *parse.ActionNode:
		v := s.evalPipeline(dot, n.Pipe)
		if len(n.Pipe.Decl) == 0 {
			s.print(n, v)
		}
	case *parse.BreakNode:
		panic(errBreak)
	case *parse.ContinueNode:
		panic(errContinue)
	case *parse.CommentNode:
	case *parse.IfNode:
		s.walkIfOrWith(parse.NodeIf, dot, n.Pipe, n.List, n.ElseList)
	case *parse.ListNode:
		for _, c := range n.Nodes {
			s.walk(dot, c)
		}
	case *parse.RangeNode:
		s.walkRange(dot, n)
	case *parse.TemplateNode:
		s.walkTemplate(dot, n)
	case *parse.TextNode:
		if _, err := s.w.Write(n.Text); err != nil {
			panic(execError{err})
		}
	case *parse.WithNode:
		s.walkIfOrWith(parse.NodeWith, dot, n.Pipe, n.List, n.ElseList)
	default:
		s.errorf("unknown node: %s", node)
	}
}

func (s *state) walkIfOrWith(typ parse.NodeType, dot value, pipe *parse.PipeNode, list, elseList *parse.ListNode) {
	defer s.pop(s.mark())
	v := s.evalPipeline(dot, pipe)
	truth, ok := isTrue(v.concrete())
	if !ok {
		s.errorf("if/with can't use %v", v.v)
	}
	switch {
	case truth && typ == parse.NodeWith:
		s.walk(v, list)
	case truth:
		s.walk(dot, list)
	case elseList != nil:
		s.walk(dot, elseList)
	}
}

// isTrue is text/template's truth: false for the invalid value, an empty
// string, list or map, false and zero.
func isTrue(x value) (truth, ok bool) {
	if !x.ok || x.v == nil {
		return false, true
	}
	switch v := x.v.(type) {
	case bool:
		return v, true
	case string:
		return v != "", true
	case []any:
		return len(v) > 0, true
	case map[string]any:
		return len(v) > 0, true
	case int:
		return v != 0, true
	case int64:
		return v != 0, true
	case uint8:
		return v != 0, true
	case float64:
		return v != 0, true
	case complex128:
		return v != 0, true
	}
	return true, true
}

func (s *state) walkRange(dot value, r *parse.RangeNode) {
	s.at(r)
	defer func() {
		if p := recover(); p != nil && p != errBreak {
			panic(p)
		}
	}()
	defer s.pop(s.mark())
	v := s.evalPipeline(dot, r.Pipe).concrete()
	m := s.mark()
	one := func(index, elem value) {
		if len(r.Pipe.Decl) > 0 {
			if r.Pipe.IsAssign {
				if len(r.Pipe.Decl) > 1 {
					s.setVar(r.Pipe.Decl[0].Ident[0], index)
				} else {
					s.setVar(r.Pipe.Decl[0].Ident[0], elem)
				}
			} else {
				s.setTopVar(1, elem)
			}
		}
		if len(r.Pipe.Decl) > 1 {
			if r.Pipe.IsAssign {
				s.setVar(r.Pipe.Decl[1].Ident[0], elem)
			} else {
				s.setTopVar(2, index)
			}
		}
		defer s.pop(m)
		defer func() {
			if p := recover(); p != nil && p != errContinue {
				panic(p)
			}
		}()
		s.walk(elem, r.List)
	}
	ran := false
	switch x := v.v.(type) {
	case []any:
		for i, e := range x {
			ran = true
			one(val(i), heldVal(e))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			ran = true
			one(val(k), heldVal(x[k]))
		}
	case int, int64, uint8:
		if len(r.Pipe.Decl) > 1 {
			s.errorf("can't use %v to iterate over more than one variable", x)
		}
		switch n := x.(type) {
		case int:
			for i := range n {
				ran = true
				one(val(i), val(i))
			}
		case int64:
			for i := range n {
				ran = true
				one(val(i), val(i))
			}
		case uint8:
			for i := range n {
				ran = true
				one(val(i), val(i))
			}
		}
	default:
		if v.ok {
			s.errorf("range can't iterate over %v", x)
		}
	}
	if !ran && r.ElseList != nil {
		s.walk(dot, r.ElseList)
	}
}

func (s *state) walkTemplate(dot value, t *parse.TemplateNode) {
	s.at(t)
	tree := s.t.trees[t.Name]
	if tree == nil {
		s.errorf("template %q not defined", t.Name)
	}
	if s.depth >= maxDepth {
		s.errorf("exceeded maximum template depth (%v)", maxDepth)
	}
	dot = s.evalPipeline(dot, t.Pipe)
	ns := &state{t: s.t, w: s.w, tree: tree, vars: []variable{{"$", dot}}, depth: s.depth + 1}
	ns.walk(dot, tree.Root)
}

func (s *state) evalPipeline(dot value, pipe *parse.PipeNode) value {
	if pipe == nil {
		return missing
	}
	s.at(pipe)
	v := missing
	for i, c := range pipe.Cmds {
		v = s.evalCommand(dot, c, final{v: v, piped: i > 0}).concrete()
	}
	for _, d := range pipe.Decl {
		if pipe.IsAssign {
			s.setVar(d.Ident[0], v)
		} else {
			s.push(d.Ident[0], v)
		}
	}
	return v
}

// final is the value piped into a command; piped is false for a
// pipeline's first command (text/template's missingVal), which a piped
// invalid value is not.
type final struct {
	v     value
	piped bool
}

func (s *state) notAFunction(args []parse.Node, f final) {
	if len(args) > 1 || f.piped {
		s.errorf("can't give argument to non-function %s", args[0])
	}
}

func (s *state) evalCommand(dot value, c *parse.CommandNode, f final) value {
	first := c.Args[0]
	switch n := first.(type) {
	case *parse.FieldNode:
		return s.evalFieldChain(dot, dot, n, n.Ident, c.Args, f)
	case *parse.ChainNode:
		return s.evalChain(dot, n, c.Args, f)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, n, c.Args, f)
	case *parse.PipeNode:
		s.notAFunction(c.Args, f)
		return s.evalPipeline(dot, n)
	case *parse.VariableNode:
		return s.evalVariable(dot, n, c.Args, f)
	}
	s.at(first)
	s.notAFunction(c.Args, f)
	switch w := first.(type) {
	case *parse.BoolNode:
		return val(w.True)
	case *parse.DotNode:
		return dot
	case *parse.NilNode:
		s.errorf("nil is not a command")
	case *parse.NumberNode:
		return s.number(w)
	case *parse.StringNode:
		return val(w.Text)
	}
	s.errorf("can't evaluate command %q", first)
	return missing
}
