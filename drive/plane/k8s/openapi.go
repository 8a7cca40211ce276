package k8s

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// schemaOf is the JSON schema of v's type (its json tags), inline.
func schemaOf(v any) (*openapi3.SchemaRef, error) {
	s, err := openapi3gen.NewSchemaRefForValue(v, nil)
	if err == nil && s.Value != nil && s.Value.Type == nil {
		s.Value.Type = &openapi3.Types{openapi3.TypeObject} // a request of no fields
	}
	return s, err
}

// OpenAPI is the plane's OpenAPI 3 document: one POST operation per op, its description
// the op's doc comment, its request and reply schemas generated from the contract's types,
// the error body ops.Error.
func OpenAPI(p *Plane) ([]byte, error) {
	errSchema, err := schemaOf(ops.Error{})
	if err != nil {
		return nil, err
	}
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "universe operator cluster plane", Version: "v1",
			Description: "36 named operations over the clusters registered for the caller's org (the token's org claim). " +
				"A namespace outside a registration's bound is refused, never narrowed."},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:         openapi3.Schemas{"Error": errSchema},
			SecuritySchemes: openapi3.SecuritySchemes{"bearer": &openapi3.SecuritySchemeRef{Value: openapi3.NewJWTSecurityScheme()}},
		},
		Security: openapi3.SecurityRequirements{{"bearer": []string{}}},
	}
	errRef := &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("a refusal or failure (code, message)").
		WithJSONSchemaRef(&openapi3.SchemaRef{Ref: "#/components/schemas/Error"})}
	for _, op := range ops.All {
		in, err := schemaOf(op.Request)
		if err != nil {
			return nil, fmt.Errorf("%s request: %w", op.Name, err)
		}
		out, err := schemaOf(op.Reply)
		if err != nil {
			return nil, fmt.Errorf("%s reply: %w", op.Name, err)
		}
		o := &openapi3.Operation{
			OperationID: op.Name,
			Tags:        []string{string(op.Group)},
			Summary:     firstSentence(op.Doc()),
			Description: op.Doc(),
			RequestBody: &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(in)},
			Responses:   openapi3.NewResponses(),
		}
		o.Responses.Set("200", &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("the reply").WithJSONSchemaRef(out)})
		o.Responses.Set("default", errRef)
		if op.Mutating {
			o.Extensions = map[string]any{"x-mutating": true}
		}
		doc.Paths.Set(Prefix+"/"+string(op.Group)+"/"+op.Member(), &openapi3.PathItem{Post: o})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// firstSentence is a doc's first sentence.
func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i > 0 {
		return doc[:i+1]
	}
	return doc
}
