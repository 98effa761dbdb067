package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
)

func schema(t testing.TB, js string) *structpb.Struct {
	t.Helper()
	var s structpb.Struct
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("schema %s: %v", js, err)
	}
	return &s
}

func args(t testing.TB, js string) *structpb.Struct { return schema(t, js) }

const okSchema = `{"type":"object","properties":{"q":{"type":"string"}}}`

func TestCompileRefuses(t *testing.T) {
	cases := []struct {
		reason  string
		tool    registry.Tool
		schema  string
		field   string
		pointer string
		want    string // substring of Reason
	}{
		{reason: "empty name", tool: registry.Tool{Name: ""}, schema: okSchema, field: "name", want: "must match"},
		{reason: "name with a space", tool: registry.Tool{Name: "a b"}, schema: okSchema, field: "name", want: "must match"},
		{reason: "name longer than 64", tool: registry.Tool{Name: strings.Repeat("x", 65)}, schema: okSchema, field: "name", want: "must match"},
		{reason: "the discovery search meta-tool's name", tool: registry.Tool{Name: registry.SearchToolsName, Backend: "127.0.0.1:1"}, schema: okSchema, field: "name", want: "reserved"},
		{reason: "the discovery describe meta-tool's name", tool: registry.Tool{Name: registry.DescribeToolName, Backend: "127.0.0.1:1"}, schema: okSchema, field: "name", want: "reserved"},
		{reason: "the label unregistered names are counted under (its counts would merge with theirs)", tool: registry.Tool{Name: "_unknown", Backend: "127.0.0.1:1"}, schema: okSchema, field: "name", want: "reserved: the gateway's metrics count"},
		{reason: "the label tools over a cap are counted under", tool: registry.Tool{Name: "_other", Backend: "127.0.0.1:1"}, schema: okSchema, field: "name", want: "reserved: the gateway's metrics count"},
		{reason: "no backend", tool: registry.Tool{Name: "t"}, schema: okSchema, field: "backend", want: "must not be empty"},
		{reason: "backend without port", tool: registry.Tool{Name: "t", Backend: "tools.local"}, schema: okSchema, field: "backend", want: "host:port"},
		{reason: "port out of range", tool: registry.Tool{Name: "t", Backend: "127.0.0.1:70000"}, schema: okSchema, field: "backend", want: "1 to 65535"},
		{reason: "negative timeout", tool: registry.Tool{Name: "t", Backend: "127.0.0.1:1", Timeout: -time.Second}, schema: okSchema, field: "timeout", want: "must not be negative"},
		{reason: "missing schema", tool: registry.Tool{Name: "t", Backend: "127.0.0.1:1"}, field: "input_schema", want: "is required"},
		{reason: "root is an array schema", schema: `{"type":"array"}`, field: "input_schema", pointer: "/type", want: `root type must be "object"; got "array"`},
		{reason: "root allows null too", schema: `{"type":["object","null"]}`, field: "input_schema", pointer: "/type", want: "got [object, null]"},
		{reason: "root with neither type nor properties", schema: `{"description":"x"}`, field: "input_schema", want: "root must be an object schema"},
		{reason: "remote $ref must not be fetched", schema: `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, field: "input_schema", want: `unresolvable $ref "https://example.com/a.json"`},
		{reason: "relative $ref leaves the document", schema: `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, field: "input_schema", want: "unresolvable $ref"},
		{reason: "file $ref must not be read", schema: `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, field: "input_schema", want: "unresolvable $ref"},
		{reason: "local $ref to a missing definition", schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`, field: "input_schema", want: `unresolvable $ref "#/$defs/nope"`},
		{reason: "unknown type name", schema: `{"type":"object","properties":{"a":{"type":"strin"}}}`, field: "input_schema", pointer: "/properties/a/type", want: "not a valid JSON Schema"},
		{reason: "bad regular expression", schema: `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, field: "input_schema", pointer: "/properties/a/pattern", want: "not valid regex"},
		{reason: "draft-03 is not supported", schema: `{"$schema":"http://json-schema.org/draft-03/schema#","type":"object"}`, field: "input_schema", pointer: "/$schema", want: "unsupported $schema"},
		{reason: "unknown meta-schema is not fetched", schema: `{"$schema":"https://example.com/meta","type":"object"}`, field: "input_schema", pointer: "/$schema", want: "unsupported $schema"},
		{reason: "required must be an array", schema: `{"type":"object","required":"a"}`, field: "input_schema", pointer: "/required", want: "not a valid JSON Schema"},
	}
	for _, c := range cases {
		tool := c.tool
		if tool.Name == "" && c.field != "name" {
			tool = registry.Tool{Name: "t", Backend: "127.0.0.1:7001"}
		}
		if c.schema != "" {
			tool.InputSchema = schema(t, c.schema)
		}
		_, err := registry.Compile(tool)
		var te *registry.ToolError
		if !errors.As(err, &te) {
			t.Errorf("%s: error %v, want *ToolError", c.reason, err)
			continue
		}
		if te.Tool != tool.Name || te.Field != c.field || te.Pointer != c.pointer || !strings.Contains(te.Reason, c.want) {
			t.Errorf("%s:\n got  tool=%q field=%q pointer=%q reason=%q\n want field=%q pointer=%q reason containing %q",
				c.reason, te.Tool, te.Field, te.Pointer, te.Reason, c.field, c.pointer, c.want)
		}
	}
}

func TestCompileAcceptsDrafts(t *testing.T) {
	cases := []struct {
		reason string
		schema string
	}{
		{"2020-12 by default", `{"type":"object","properties":{"n":{"type":"integer"}},"$defs":{"x":{"type":"string"}}}`},
		{"explicit 2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"integer"}}}`},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"n":{"type":"integer"}}}`},
		{"draft-07 with definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"$ref":"#/definitions/i"}},"definitions":{"i":{"type":"integer"}}}`},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","type":"object","properties":{"n":{"type":"integer"}}}`},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer"}}}`},
		{"properties without type is an object schema", `{"properties":{"n":{"type":"integer"}}}`},
		{"type list of just object", `{"type":["object"],"properties":{"n":{"type":"integer"}}}`},
	}
	for _, c := range cases {
		e, err := registry.Compile(registry.Tool{Name: "t", Backend: "127.0.0.1:7001", InputSchema: schema(t, c.schema)})
		if err != nil {
			t.Errorf("%s: %v", c.reason, err)
			continue
		}
		// The ±2^53 rule must hold under every draft: 2^53+2 is whole but not exact-safe.
		if ve := e.Validate(args(t, `{"n":9007199254740994}`), nil); ve == nil || !strings.Contains(ve.Error(), "between -2^53 and 2^53") {
			t.Errorf("%s: 2^53+2 accepted as integer: %v", c.reason, ve)
		}
		if ve := e.Validate(args(t, `{"n":9007199254740992}`), nil); ve != nil {
			t.Errorf("%s: 2^53 refused: %v", c.reason, ve)
		}
		if ve := e.Validate(args(t, `{"n":2.5}`), nil); ve == nil {
			t.Errorf("%s: 2.5 accepted as integer", c.reason)
		}
	}
}

func TestBackendTargets(t *testing.T) {
	cases := []struct {
		reason string
		target string
		ok     bool
	}{
		{"IPv4 host:port", "127.0.0.1:7001", true},
		{"name host:port", "tools.internal:443", true},
		{"bracketed IPv6", "[::1]:7001", true},
		{"dns with empty authority", "dns:///tools:7001", true},
		{"dns with authority", "dns://8.8.8.8/tools:7001", true},
		{"dns without port uses the default", "dns:///tools", true},
		{"unix absolute", "unix:///run/tools.sock", true},
		{"unix relative", "unix:tools.sock", true},
		{"unix-abstract", "unix-abstract:tools", true},
		{"passthrough", "passthrough:///127.0.0.1:7001", true},
		{"ipv4 list", "ipv4:127.0.0.1:7001,127.0.0.2:7001", true},
		{"ipv6", "ipv6:[::1]:7001", true},
		{"static list of replicas (balanced round_robin)", "static:///10.0.0.1:7001,tools-b.internal:7001", true},
		{"static single address", "static:///127.0.0.1:7001", true},
		{"static without the /// form", "static:127.0.0.1:7001", false},
		{"static empty list", "static:///", false},
		{"static entry without a port", "static:///10.0.0.1:7001,10.0.0.2", false},
		{"empty", "", false},
		{"no port", "127.0.0.1", false},
		{"port zero", "127.0.0.1:0", false},
		{"port not a number", "127.0.0.1:http", false},
		{"port too big", "127.0.0.1:65536", false},
		{"empty host", ":7001", false},
		{"unknown scheme", "http://127.0.0.1:7001", false},
		{"dns with no host", "dns:///", false},
		{"dns with bad port", "dns:///tools:99999", false},
		{"unix without path", "unix:", false},
		{"unix with a host", "unix://host/path", false},
		{"ipv4 scheme with an IPv6 address", "ipv4:[::1]:7001", false},
		{"ipv4 scheme with a name", "ipv4:tools:7001", false},
		{"whitespace", "127.0.0.1:7001 ", false},
	}
	for _, c := range cases {
		r := registry.ValidateBackend(c.target)
		if (r == "") != c.ok {
			t.Errorf("%s: ValidateBackend(%q) = %q, want ok=%v", c.reason, c.target, r, c.ok)
		}
	}
}
