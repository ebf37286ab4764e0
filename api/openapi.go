package api

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of the HTTP API (openapi.yaml, kept by
// hand), which the gateway serves as JSON at GET /v1/openapi.json. The
// gateway's tests hold every response they see to it.
//
//go:embed openapi.yaml
var OpenAPI []byte
