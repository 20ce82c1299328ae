package gcs

import (
	"fmt"
	"strconv"
	"strings"
)

// escapeKey maps a blob key to a GCS object name. GCS refuses CR and LF,
// and gcsblob also escapes the "/" of "../"; such runes become
// "__0x<hex>__". The first "_" of any "__0x" in the key is escaped too, so
// that unescapeKey(escapeKey(k)) == k for every key. For keys without
// "__0x" this is exactly what gocloud.dev/blob/gcsblob does.
func escapeKey(key string) string {
	r := []rune(key)
	var sb strings.Builder
	for i, c := range r {
		switch {
		case c == '\n' || c == '\r',
			c == '/' && i > 1 && r[i-1] == '.' && r[i-2] == '.',
			c == '_' && strings.HasPrefix(string(r[i:min(i+4, len(r))]), "__0x"):
			fmt.Fprintf(&sb, "__%#x__", c)
		default:
			sb.WriteRune(c)
		}
	}
	return sb.String()
}

// unescapeKey reverses escapeKey: each "__0x<hex>__" becomes its rune,
// scanning left to right (as gcsblob does).
func unescapeKey(name string) string {
	if !strings.Contains(name, "__0x") {
		return name
	}
	var sb strings.Builder
	for len(name) > 0 {
		if c, n, ok := escapeAt(name); ok {
			sb.WriteRune(c)
			name = name[n:]
			continue
		}
		sb.WriteByte(name[0])
		name = name[1:]
	}
	return sb.String()
}

// escapeAt parses a "__0x<hex>__" at the start of s, returning the rune
// and the sequence's length.
func escapeAt(s string) (rune, int, bool) {
	if !strings.HasPrefix(s, "__0x") {
		return 0, 0, false
	}
	end := strings.IndexByte(s[4:], '_')
	if end < 0 || !strings.HasPrefix(s[4+end:], "__") {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(s[4:4+end], 16, 32)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), 4 + end + 2, true
}
