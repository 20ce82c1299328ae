package remedy

import (
	_ "embed"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

//go:embed reason-codes.md
var document string

// Block is one paragraph of a remedy: prose to wrap, or a code block to
// show verbatim.
type Block struct {
	Code bool
	Text string
}

// Entry is what the documentation says about one reason code.
type Entry struct {
	Code model.ReasonCode
	// Impact as the document states it ("control", "failover", "info").
	Impact string
	// Summary is the first paragraph: what the code means.
	Summary string
	// Fix is the remedy: the "Fix:" paragraph (without its label) and
	// everything after it up to the next heading.
	Fix []Block
}

// Book holds the entries of one reason-codes document.
type Book struct {
	entries map[model.ReasonCode]Entry
}

// Load parses the embedded document.
func Load() Book { return Parse(document) }

// Lookup returns the entry for code; ok is false for a code the document
// does not describe.
func (b Book) Lookup(code model.ReasonCode) (Entry, bool) {
	e, ok := b.entries[code]
	return e, ok
}

// FixText is the remedy as one string: paragraphs separated by blank
// lines, code blocks indented by four spaces. "" when the code is not
// documented.
func (b Book) FixText(code model.ReasonCode) string {
	e, ok := b.entries[code]
	if !ok {
		return ""
	}
	parts := make([]string, 0, len(e.Fix))
	for _, bl := range e.Fix {
		if bl.Code {
			lines := strings.Split(bl.Text, "\n")
			for i, l := range lines {
				lines[i] = "    " + l
			}
			parts = append(parts, strings.Join(lines, "\n"))
			continue
		}
		parts = append(parts, bl.Text)
	}
	return strings.Join(parts, "\n\n")
}

// Parse reads a reason-codes document: every "### code" section with its
// "Impact:" line, first paragraph and "Fix:" part.
func Parse(doc string) Book {
	b := Book{entries: map[model.ReasonCode]Entry{}}
	var (
		cur     *Entry
		blocks  []Block
		para    []string
		inCode  bool
		code    []string
		fixing  bool
		summary bool
	)
	flushPara := func() {
		if len(para) == 0 {
			return
		}
		text := strings.Join(para, " ")
		para = nil
		if cur == nil {
			return
		}
		switch {
		case strings.HasPrefix(text, "Impact:"):
			cur.Impact = strings.Trim(strings.TrimSpace(strings.TrimPrefix(text, "Impact:")), "`")
			summary = true
			return
		case strings.HasPrefix(text, "Fix:"):
			fixing = true
			text = strings.TrimSpace(strings.TrimPrefix(text, "Fix:"))
		}
		if summary && !fixing {
			cur.Summary = text
			summary = false
			return
		}
		if fixing {
			blocks = append(blocks, Block{Text: text})
		}
	}
	finish := func() {
		flushPara()
		if cur != nil {
			cur.Fix = blocks
			b.entries[cur.Code] = *cur
		}
		cur, blocks, fixing, summary = nil, nil, false, false
	}
	for _, line := range strings.Split(doc, "\n") {
		if inCode {
			if strings.HasPrefix(line, "```") {
				inCode = false
				if fixing && cur != nil {
					blocks = append(blocks, Block{Code: true, Text: strings.Join(code, "\n")})
				}
				code = nil
				continue
			}
			code = append(code, line)
			continue
		}
		switch {
		case strings.HasPrefix(line, "```"):
			flushPara()
			inCode = true
		case strings.HasPrefix(line, "#"):
			finish()
			if name, ok := strings.CutPrefix(line, "### "); ok {
				cur = &Entry{Code: model.ReasonCode(strings.TrimSpace(name))}
			}
		case strings.TrimSpace(line) == "":
			flushPara()
		default:
			para = append(para, strings.TrimSpace(line))
		}
	}
	finish()
	return b
}
