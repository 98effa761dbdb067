package openapiimport

import (
	"context"
	"strings"
	"testing"
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
