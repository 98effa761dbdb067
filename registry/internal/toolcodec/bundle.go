package toolcodec

import (
	"encoding/json"
	"fmt"

	"github.com/flowdrop/gateway/registry"
)

// BundleVersion is the format version of a stored bundle. DecodeBundle
// refuses any other, as Decode does for tools. A build without bundles
// never reads them (they have their own bucket or key prefix).
const BundleVersion = 1

// bundleRecord is the JSON document of a registry.Bundle.
type bundleRecord struct {
	V              int      `json:"v"`
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	Tools          []string `json:"tools,omitempty"`
	Globs          []string `json:"globs,omitempty"`
	LabelSelectors []string `json:"label_selectors,omitempty"`
	Discovery      string   `json:"discovery,omitempty"`
	Revision       int64    `json:"revision,omitempty"`
}

// EncodeBundle returns the stored form of b, including b.Revision when non-zero.
func EncodeBundle(b registry.Bundle) ([]byte, error) {
	out, err := json.Marshal(bundleRecord{V: BundleVersion, Name: b.Name, Description: b.Description, Tools: b.Tools, Globs: b.Globs,
		LabelSelectors: b.LabelSelectors, Discovery: string(b.Discovery), Revision: b.Revision})
	if err != nil {
		return nil, fmt.Errorf("toolcodec: bundle %q: %w", b.Name, err)
	}
	return out, nil
}

// DecodeBundle parses a stored bundle. It does not check the definition:
// the registry compiles what it serves (registry.CompileBundle).
func DecodeBundle(b []byte) (registry.Bundle, error) {
	var r bundleRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return registry.Bundle{}, fmt.Errorf("toolcodec: decode bundle: %w", err)
	}
	if r.V != BundleVersion {
		return registry.Bundle{}, fmt.Errorf("toolcodec: bundle %q: unsupported format version %d (this build reads version %d)", r.Name, r.V, BundleVersion)
	}
	return registry.Bundle{Name: r.Name, Description: r.Description, Tools: r.Tools, Globs: r.Globs, LabelSelectors: r.LabelSelectors,
		Discovery: registry.Discovery(r.Discovery), Revision: r.Revision}, nil
}
