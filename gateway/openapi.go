package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/api"
	"go.yaml.in/yaml/v3"
)

// openapiRoutes serves the API's own contract, api/openapi.yaml, as JSON at
// GET /v1/openapi.json. It needs no key: it describes the API, not a tenant.
func (s *Server) openapiRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		doc, err := OpenAPIJSON()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if s.cfg.PublicURL == "" {
			w.Header().Set("Vary", "Host")
		}
		w.Write(withServer(doc, s.serverURL(r)))
	})
	m.HandleFunc("/v1/openapi.json", methodNotAllowed)
}

var openapiJSON = sync.OnceValues(func() ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	var b bytes.Buffer
	if err := writeJSONNode(&b, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml as JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
})

// OpenAPIJSON is the OpenAPI document (api/openapi.yaml) as JSON, with its
// keys in the document's order. Its servers entry is the relative URL "/"
// (this gateway); GET /v1/openapi.json names the gateway's own address there.
func OpenAPIJSON() ([]byte, error) { return openapiJSON() }

// serverURL is the address the served document names as its server: the
// configured public URL; without one, the scheme and Host the request was
// sent to only when that Host names this machine (localhost, 127.0.0.0/8,
// ::1), else "" (the document keeps the relative "/"). A Host header is the
// client's claim, and no X-Forwarded-* header is believed (toolgate has no
// trusted-proxy setting): a gateway reached any other way is told its
// address by http.public_url, which check requires when it has API keys and
// listens beyond loopback.
func (s *Server) serverURL(r *http.Request) string {
	if u := strings.TrimSuffix(s.cfg.PublicURL, "/"); u != "" {
		return u
	}
	host := r.Host
	if host == "" || strings.ContainsAny(host, "/\\\"<> ") {
		return ""
	}
	if !loopbackHost(host) { // the dashboard's rule (ui.go)
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + host
}

// withServer returns doc with the url of its servers entry, the relative
// "/", set to url ("" keeps "/").
func withServer(doc []byte, url string) []byte {
	at := bytes.Index(doc, []byte(`"servers": [`))
	if url == "" || at < 0 {
		return doc
	}
	rel := []byte(`"url": "/"`)
	k := bytes.Index(doc[at:], rel)
	if k < 0 {
		return doc
	}
	quoted, _ := json.Marshal(url)
	out := make([]byte, 0, len(doc)+len(quoted))
	out = append(out, doc[:at+k]...)
	out = append(out, `"url": `...)
	out = append(out, quoted...)
	return append(out, doc[at+k+len(rel):]...)
}

// writeJSONNode writes a YAML node as JSON, keeping the order of mapping keys.
func writeJSONNode(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document", n.Line)
		}
		return writeJSONNode(b, n.Content[0])
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSONNode(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONNode(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		switch n.Tag {
		case "!!str", "!!binary":
			v = n.Value
		case "!!int":
			i, err := strconv.ParseInt(n.Value, 0, 64)
			if err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			v = i
		default: // !!bool, !!float, !!null
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
		}
		j, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.Write(j)
	case yaml.AliasNode:
		return writeJSONNode(b, n.Alias)
	default:
		return fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	return nil
}
