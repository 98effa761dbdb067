package openapiimport

import (
	"errors"
	"fmt"
	"mime"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// Options choose what Tools imports.
type Options struct {
	// BaseURL is stored in every tool: where the API is served.
	BaseURL string
	// Operation, when set, imports only the operation with this operationId.
	Operation string
	// Prefix starts every tool name.
	Prefix string
}

// Skipped is an operation not imported, and why.
type Skipped struct {
	Operation string // the operationId, or "METHOD /path" without one
	Reason    string
}

// bodyArgument names the argument that is a whole non-object JSON body.
const bodyArgument = "body"

// notNameChar is what a tool name may not hold (registry.ValidateName).
var notNameChar = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// Tools is one tool per operation of doc, in path then method order, and
// the operations skipped with their reasons. An error is a mistake in o.
func Tools(doc *openapi3.T, o Options) ([]*gatewayv1.Tool, []Skipped, error) {
	if r := registry.ValidateBaseURL(o.BaseURL); r != "" {
		return nil, nil, fmt.Errorf("base URL %s", r)
	}
	var tools []*gatewayv1.Tool
	var skipped []Skipped
	names := map[string]string{}
	found := false
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, method := range methods {
			op := ops[method]
			id := op.OperationID
			label := id
			if label == "" {
				label = method + " " + path
			}
			if o.Operation != "" && id != o.Operation {
				continue
			}
			found = true
			name, reason := toolName(o.Prefix, id, method, path)
			if reason == "" {
				if other, dup := names[name]; dup {
					reason = fmt.Sprintf("tool name %q is also %s's", name, other)
				}
			}
			if reason != "" {
				skipped = append(skipped, Skipped{label, reason})
				continue
			}
			t, reason := operationTool(doc, o.BaseURL, method, path, item, op)
			if reason != "" {
				skipped = append(skipped, Skipped{label, reason})
				continue
			}
			t.Name = name
			names[name] = label
			tools = append(tools, t)
		}
	}
	if o.Operation != "" && !found {
		return nil, nil, fmt.Errorf("no operation has operationId %q", o.Operation)
	}
	return tools, skipped, nil
}

// toolName maps an operationId (or, without one, the method and path)
// into a tool name: every run of characters a name may not hold becomes
// "_". Too long a name is refused, naming it.
func toolName(prefix, id, method, path string) (string, string) {
	base := id
	if base == "" {
		base = strings.ToLower(method) + path
	}
	name := prefix + strings.Trim(notNameChar.ReplaceAllString(base, "_"), "_")
	if err := registry.ValidateName(name); err != nil {
		return "", fmt.Sprintf("tool name %q (from %q) is not a valid tool name: at most 64 of [a-zA-Z0-9_.-]", name, base)
	}
	return name, ""
}

// operationTool is the tool of one operation, or why there is none. Its
// schemas are self-contained: the components they reference inlined, or,
// when that would pass MaxInlineNodes, shared in the input schema's $defs.
func operationTool(doc *openapi3.T, baseURL, method, path string, item *openapi3.PathItem, op *openapi3.Operation) (*gatewayv1.Tool, string) {
	conv := newSchemaConverter(doc, false)
	t, reason := operationToolWith(conv, baseURL, method, path, item, op)
	if conv.nodes > MaxInlineNodes {
		return operationToolWith(newSchemaConverter(doc, true), baseURL, method, path, item, op)
	}
	return t, reason
}

func operationToolWith(conv *schemaConverter, baseURL, method, path string, item *openapi3.PathItem, op *openapi3.Operation) (*gatewayv1.Tool, string) {
	props := map[string]any{}
	var required []any
	spec := &gatewayv1.HttpOperation{BaseUrl: baseURL, Method: method, Path: path}

	for _, p := range parameters(item, op) {
		var in gatewayv1.HttpParameterIn
		switch p.In {
		case openapi3.ParameterInPath:
			in = gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_PATH
		case openapi3.ParameterInQuery:
			in = gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_QUERY
		case openapi3.ParameterInHeader:
			if r := registry.HTTPHeaderRefused(p.Name); r != "" {
				return nil, fmt.Sprintf("parameter %q: %s", p.Name, r)
			}
			in = gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_HEADER
		default:
			return nil, fmt.Sprintf("parameter %q is in %s, which the gateway does not send", p.Name, p.In)
		}
		if p.Schema == nil {
			return nil, fmt.Sprintf("parameter %q has content instead of a schema", p.Name)
		}
		if _, dup := props[p.Name]; dup {
			return nil, fmt.Sprintf("parameter name %q is used twice (in different parts)", p.Name)
		}
		s, err := conv.convert(p.Schema)
		if err != nil {
			return nil, fmt.Sprintf("parameter %q: %v", p.Name, err)
		}
		if _, ok := s["description"]; !ok && p.Description != "" {
			s["description"] = p.Description
		}
		props[p.Name] = s
		if p.Required || p.In == openapi3.ParameterInPath {
			required = append(required, p.Name)
		}
		spec.Parameters = append(spec.Parameters, &gatewayv1.HttpParameter{Name: p.Name, In: in})
	}

	if rb := op.RequestBody; rb != nil && rb.Value != nil && len(rb.Value.Content) > 0 {
		mt := jsonMedia(rb.Value.Content)
		if mt == nil {
			return nil, fmt.Sprintf("request body is not JSON (%s)", strings.Join(contentTypes(rb.Value.Content), ", "))
		}
		body, err := conv.convert(mt.Schema)
		if err != nil {
			return nil, fmt.Sprintf("request body: %v", err)
		}
		bodyProps, isObject := body["properties"].(map[string]any)
		collides := false
		for name := range bodyProps {
			if _, dup := props[name]; dup {
				collides = true
			}
		}
		if isObject && len(bodyProps) > 0 && !collides && body["additionalProperties"] != true {
			names := make([]string, 0, len(bodyProps))
			for name := range bodyProps {
				names = append(names, name)
			}
			sort.Strings(names)
			bodyRequired := map[string]bool{}
			if l, ok := body["required"].([]any); ok && rb.Value.Required {
				for _, r := range l {
					if s, ok := r.(string); ok {
						bodyRequired[s] = true
					}
				}
			}
			for _, name := range names {
				props[name] = bodyProps[name]
				if bodyRequired[name] {
					required = append(required, name)
				}
				spec.Parameters = append(spec.Parameters, &gatewayv1.HttpParameter{Name: name, In: gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_BODY})
			}
		} else {
			if _, dup := props[bodyArgument]; dup {
				return nil, fmt.Sprintf("the request body's argument %q is also a parameter's name", bodyArgument)
			}
			props[bodyArgument] = body
			if rb.Value.Required {
				required = append(required, bodyArgument)
			}
			spec.BodyArgument = bodyArgument
		}
	}

	if rs := responseSchema(conv.doc, op); rs != nil {
		if s, err := structpb.NewStruct(rs); err == nil {
			spec.ResponseSchema = s
		}
	}
	input := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		input["required"] = required
	}
	if len(conv.defs) > 0 {
		input["$defs"] = conv.defs
	}
	schema, err := structpb.NewStruct(input)
	if err != nil {
		return nil, fmt.Sprintf("input schema: %v", err)
	}
	return &gatewayv1.Tool{Description: description(method, path, op), InputSchema: schema,
		Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_HttpOperation{HttpOperation: spec}}}, ""
}

// parameters are the path item's parameters overridden by the
// operation's (same name and location), in that order.
func parameters(item *openapi3.PathItem, op *openapi3.Operation) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	at := map[string]int{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			p := ref.Value
			key := p.In + "\x00" + p.Name
			if i, ok := at[key]; ok {
				out[i] = p
				continue
			}
			at[key] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// jsonMedia is content's JSON media type (application/json or *+json).
func jsonMedia(content openapi3.Content) *openapi3.MediaType {
	for _, ct := range contentTypes(content) {
		mt, _, err := mime.ParseMediaType(ct)
		if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return content[ct]
		}
	}
	return nil
}

func contentTypes(content openapi3.Content) []string {
	out := make([]string, 0, len(content))
	for ct := range content {
		out = append(out, ct)
	}
	sort.Strings(out)
	return out
}

// responseSchema is the first 2xx response's JSON schema (by status
// code), nil when there is none or it does not convert; inlined, or
// shared as the input schema's are.
func responseSchema(doc *openapi3.T, op *openapi3.Operation) map[string]any {
	if op.Responses == nil {
		return nil
	}
	codes := make([]string, 0, op.Responses.Len())
	for code := range op.Responses.Map() {
		if strings.HasPrefix(code, "2") {
			codes = append(codes, code)
		}
	}
	sort.Strings(codes)
	for _, code := range codes {
		r := op.Responses.Value(code)
		if r == nil || r.Value == nil {
			continue
		}
		if mt := jsonMedia(r.Value.Content); mt != nil && mt.Schema != nil {
			conv := newSchemaConverter(doc, false)
			s, err := conv.convert(mt.Schema)
			if errors.Is(err, errOverBudget) {
				conv = newSchemaConverter(doc, true)
				s, err = conv.convert(mt.Schema)
			}
			if err != nil {
				return nil
			}
			if len(conv.defs) > 0 {
				s["$defs"] = conv.defs
			}
			return s
		}
	}
	return nil
}

// description is the summary and the description, or "METHOD /path".
func description(method, path string, op *openapi3.Operation) string {
	parts := []string{}
	for _, s := range []string{op.Summary, op.Description} {
		if s = strings.TrimSpace(s); s != "" && (len(parts) == 0 || parts[0] != s) {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return method + " " + path
	}
	return strings.Join(parts, "\n\n")
}
