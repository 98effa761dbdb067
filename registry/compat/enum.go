package compat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// finiteValues is the old view's finite value set: its "const", or its
// "enum" — the values the old schema can accept at most.
func finiteValues(m map[string]any) ([]any, string, bool) {
	if v, ok := m["const"]; ok {
		return []any{v}, "const", true
	}
	if l, ok := m["enum"].([]any); ok {
		return l, "enum", true
	}
	return nil, "", false
}

// probeKey is where a probed schema is put in a copy of the new document,
// so its local references still resolve.
const probeKey = "flowdrop-compat-probe"

// probe checks an old enum or const value by value with the new schema n
// itself (the jsonschema validator, in the new document): a value of a
// type the old schema admits that n refuses is a narrowing.
func (c *comparer) probe(vals []any, kw string, om map[string]any, n node, a at) {
	c.probes++
	if c.probes > maxProbes || len(vals) > maxProbeValues {
		panic(errTooComplex{fmt.Sprintf("more than %d old enum/const sets or %d values in one", maxProbes, maxProbeValues)})
	}
	sch, err := c.compileProbe(n.v)
	if err != nil {
		c.add(a.path, kw, TooComplex, "breaking: too complex to compare (%s: the new schema could not be compiled to check the old %s: %v)", a.subject(), kw, err)
		return
	}
	oT := typesOf(om)
	var refused []string
	keyword := ""
	for _, v := range vals {
		if t := valueType(v); !slices.Contains(oT, t) && !(t == "integer" && slices.Contains(oT, "number")) {
			continue // the old schema refused it anyway
		}
		err := sch.Validate(v)
		if err == nil {
			continue
		}
		b, _ := json.Marshal(v)
		refused = append(refused, string(b))
		if keyword == "" {
			keyword = refusingKeyword(err)
		}
	}
	if len(refused) == 0 {
		return
	}
	if _, has := n.v.(map[string]any)[kw]; has || keyword == "" {
		keyword = kw
	}
	c.add(a.path, keyword, Narrowed, "%s: %s %s accepted before, refused now (%s)", a.subject(), plural(len(refused), "value"), strings.Join(refused, ", "), keyword)
}

// compileProbe compiles schema s as part of a copy of the new document.
func (c *comparer) compileProbe(s any) (*jsonschema.Schema, error) {
	doc := make(map[string]any, len(c.new)+1)
	for k, v := range c.new {
		doc[k] = v
	}
	defs := map[string]any{}
	if d, ok := c.new["$defs"].(map[string]any); ok {
		for k, v := range d {
			defs[k] = v
		}
	}
	defs[probeKey] = s
	doc["$defs"] = defs
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	const url = "urn:flowdrop:compat:new"
	if err := comp.AddResource(url, doc); err != nil {
		return nil, err
	}
	return comp.Compile(url + "#/$defs/" + probeKey)
}

// refusingKeyword names the keyword of the first leaf of a validation error.
func refusingKeyword(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return ""
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	if kp := ve.ErrorKind.KeywordPath(); len(kp) > 0 {
		return kp[len(kp)-1]
	}
	return ""
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
