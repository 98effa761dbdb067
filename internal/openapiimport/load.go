package openapiimport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"
)

// Load reads an OpenAPI 3 document, or a Swagger 2.0 one converted to
// OpenAPI 3, from JSON or YAML, and validates it. References must stay in
// the document: nothing is fetched.
func Load(ctx context.Context, data []byte) (*openapi3.T, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not JSON or YAML: %w", err)
	}
	var head struct {
		Swagger string `json:"swagger"`
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %w", err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = ctx
	var doc *openapi3.T
	switch {
	case strings.HasPrefix(head.Swagger, "2."):
		var doc2 openapi2.T
		if err := json.Unmarshal(js, &doc2); err != nil {
			return nil, fmt.Errorf("a Swagger %s document that does not read: %w", head.Swagger, err)
		}
		if doc, err = openapi2conv.ToV3(&doc2); err != nil {
			return nil, fmt.Errorf("converting Swagger %s to OpenAPI 3: %w", head.Swagger, err)
		}
		if err := loader.ResolveRefsIn(doc, nil); err != nil {
			return nil, fmt.Errorf("references: %w", err)
		}
	case strings.HasPrefix(head.OpenAPI, "3."):
		if doc, err = loader.LoadFromData(js); err != nil {
			return nil, fmt.Errorf("OpenAPI %s document: %w", head.OpenAPI, err)
		}
	default:
		return nil, fmt.Errorf("neither \"openapi: 3.x\" nor \"swagger: 2.0\" (got openapi %q, swagger %q)", head.OpenAPI, head.Swagger)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("the document is not valid OpenAPI 3: %w", err)
	}
	return doc, nil
}
