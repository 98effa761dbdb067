package compat

import (
	"net/url"
	"strconv"
	"strings"
)

// unsupported names what in doc this package does not resolve ("" when
// nothing): references that are not local JSON Pointers, dynamic
// references, and a nested "$id" (which would move the base of the
// references below it).
func unsupported(doc map[string]any) string {
	why := ""
	var walk func(v any, root bool)
	walk = func(v any, root bool) {
		if why != "" {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				switch k {
				case "$dynamicRef", "$recursiveRef":
					why = k + " is not compared"
					return
				case "$id":
					if !root {
						why = "a nested $id is not compared"
						return
					}
				case "$ref":
					if s, ok := x.(string); ok && !strings.HasPrefix(s, "#") {
						why = "$ref " + strconv.Quote(s) + " leaves the document"
						return
					}
				}
				walk(x, false)
			}
		case []any:
			for _, x := range t {
				walk(x, false)
			}
		}
	}
	walk(doc, true)
	return why
}

// deref is the schema a local reference names in root; ok is false when
// it does not resolve (to a schema).
func (c *comparer) deref(root map[string]any, ref string) (node, bool) {
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return node{}, false
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		return anchor(root, frag)
	}
	var cur any = root
	if frag != "" {
		for _, raw := range strings.Split(frag[1:], "/") {
			tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
			switch t := cur.(type) {
			case map[string]any:
				x, ok := t[tok]
				if !ok {
					return node{}, false
				}
				cur = x
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(t) {
					return node{}, false
				}
				cur = t[i]
			default:
				return node{}, false
			}
		}
	}
	switch cur.(type) {
	case map[string]any, bool:
		return node{v: cur, loc: "#" + frag}, true
	}
	return node{}, false
}

// anchor finds the schema declaring "$anchor": name (its location is
// "#name", unique in a document).
func anchor(root map[string]any, name string) (node, bool) {
	var found any
	var walk func(any)
	walk = func(v any) {
		if found != nil {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			if t["$anchor"] == name {
				found = t
				return
			}
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(root)
	if found == nil {
		return node{}, false
	}
	return node{v: found, loc: "#" + name}, true
}

// child is the node v at the keyword tokens below n (no location when n
// has none).
func child(n node, v any, tokens ...string) node {
	if n.loc == "" {
		return node{v: v}
	}
	loc := n.loc
	for _, t := range tokens {
		loc += "/" + escape(t)
	}
	return node{v: v, loc: loc}
}
