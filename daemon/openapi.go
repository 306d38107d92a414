package daemon

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"go.yaml.in/yaml/v3"
)

// openAPIYAML is the HTTP API's OpenAPI 3.1 document, written by hand;
// openapi_test.go checks it against the handlers.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPI returns the HTTP API's OpenAPI 3.1 document as JSON, as
// GET /v1/openapi.json serves it.
func OpenAPI() []byte { return openAPIJSON }

var openAPIJSON = func() []byte {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		panic("daemon: openapi.yaml: " + err.Error()) // embedded and tested: a build defect, not input
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("daemon: openapi.yaml: " + err.Error())
	}
	return append(b, '\n')
}()

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIJSON)
}
