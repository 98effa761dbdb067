package openapiimport

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// skipsDoc has one importable operation and one of each kind the import
// leaves out.
const skipsDoc = `
openapi: 3.0.3
info: {title: skips, version: "1"}
paths:
  /ok:
    get:
      operationId: "list items!"
      responses: {"200": {description: ok}}
  /dup:
    get:
      operationId: "list items?"
      responses: {"200": {description: ok}}
  /cookie:
    get:
      operationId: withCookie
      parameters: [{name: session, in: cookie, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /host:
    get:
      operationId: setsHost
      parameters: [{name: Host, in: header, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /tree:
    post:
      operationId: plantTree
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Node"}
      responses: {"200": {description: ok}}
  /form:
    post:
      operationId: postForm
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {type: object}
      responses: {"200": {description: ok}}
  /long:
    get:
      operationId: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
      responses: {"200": {description: ok}}
components:
  schemas:
    Node:
      type: object
      properties:
        children: {type: array, items: {$ref: "#/components/schemas/Node"}}
`

// TestToolsSkips: what the import leaves out, each with a reason naming
// the operation and the cause; names are mapped deterministically.
func TestToolsSkips(t *testing.T) {
	doc, err := Load(context.Background(), []byte(skipsDoc))
	if err != nil {
		t.Fatal(err)
	}
	tools, skipped, err := Tools(doc, Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].GetName() != "list_items" {
		t.Errorf("tools %v, want one, list_items (operationId \"list items?\" mapped; /dup sorts first)", tools)
	}
	got := map[string]string{}
	for _, s := range skipped {
		got[s.Operation] = s.Reason
	}
	for _, r := range []struct {
		op, reason, wantIn string
	}{
		{"list items!", "two operationIds that map to one name: the later (by path) is skipped, naming the other", `"list_items" is also list items?'s`},
		{"withCookie", "cookie parameters are not sent by the gateway", "in cookie"},
		{"setsHost", "Host is not an argument's to set", `"Host"`},
		{"plantTree", "a recursive schema cannot be inlined into a tool schema", `"Node" is recursive`},
		{"postForm", "only JSON bodies", "not JSON (application/x-www-form-urlencoded)"},
		{strings.Repeat("a", 72), "a name over 64 characters is refused, naming it", "not a valid tool name"},
	} {
		if reason, ok := got[r.op]; !ok || !strings.Contains(reason, r.wantIn) {
			t.Errorf("%s: skipped with %q, want a reason containing %q (%s)", r.op, reason, r.wantIn, r.reason)
		}
	}
	if len(skipped) != 6 {
		t.Errorf("skipped %v, want exactly the six above", skipped)
	}
}

// dagDoc is a DAG of components levels deep (L_i uses L_(i+1) twice);
// with loop, the last level refers back to the first.
func dagDoc(levels int, loop bool) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: dag, version: \"1\"}\npaths:\n  /dag:\n    post:\n      operationId: dag\n" +
		"      requestBody:\n        content:\n          application/json:\n            schema: {$ref: \"#/components/schemas/L0\"}\n" +
		"      responses: {\"200\": {description: ok}}\ncomponents:\n  schemas:\n")
	for i := range levels {
		fmt.Fprintf(&b, "    L%d: {type: object, properties: {a: {$ref: \"#/components/schemas/L%d\"}, b: {$ref: \"#/components/schemas/L%d\"}}}\n", i, i+1, i+1)
	}
	last := `{type: string}`
	if loop {
		last = `{type: object, properties: {back: {$ref: "#/components/schemas/L0"}}}`
	}
	fmt.Fprintf(&b, "    L%d: %s\n", levels, last)
	return b.String()
}

// TestSharedDefinitions: components are inlined while the schema stays
// within MaxInlineNodes, and kept shared in $defs past it; recursion is
// refused either way.
func TestSharedDefinitions(t *testing.T) {
	for _, r := range []struct {
		name, reason, doc string
		wantDefs          int // -1: skipped
		wantSkip          string
	}{
		{name: "small-dag", reason: "2^6 leaves: inlined as before, no $defs", doc: dagDoc(6, false), wantDefs: 0},
		{name: "deep-dag", reason: "2^30 leaves inlined would exhaust memory: L1…L30 shared", doc: dagDoc(30, false), wantDefs: 30},
		{name: "deep-dag-loop", reason: "a recursive component is refused also when shared", doc: dagDoc(30, true), wantDefs: -1, wantSkip: "is recursive"},
	} {
		t.Run(r.name, func(t *testing.T) {
			doc, err := Load(context.Background(), []byte(r.doc))
			if err != nil {
				t.Fatal(err)
			}
			tools, skipped, err := Tools(doc, Options{BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				t.Fatal(err)
			}
			if r.wantDefs < 0 {
				if len(tools) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, r.wantSkip) {
					t.Fatalf("tools %d, skipped %v; want dag skipped with %q (%s)", len(tools), skipped, r.wantSkip, r.reason)
				}
				return
			}
			if len(tools) != 1 {
				t.Fatalf("tools %d, skipped %v; want dag (%s)", len(tools), skipped, r.reason)
			}
			s := tools[0].GetInputSchema()
			if got := len(s.GetFields()["$defs"].GetStructValue().GetFields()); got != r.wantDefs {
				t.Errorf("$defs holds %d; want %d (%s)", got, r.wantDefs, r.reason)
			}
			if _, err := registry.Compile(registry.Tool{Name: "dag", InputSchema: s, Backend: "127.0.0.1:1"}); err != nil {
				t.Errorf("the schema does not compile as the registry would: %v (%s)", err, r.reason)
			}
		})
	}
}
