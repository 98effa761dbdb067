// Package openapiimport turns the operations of an OpenAPI 3 document
// (or a Swagger 2.0 one, converted) into HTTP-operation tools: what
// `flowdropctl tools import openapi` registers.
package openapiimport
