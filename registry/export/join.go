package export

import (
	"encoding/json"
	"fmt"
)

// Join is one document of format f holding the definitions of pages, in
// order: each page a document Export made (ExportTools pages), so a client
// can page a large registry and still hand its API one document.
func Join(f Format, pages []json.RawMessage) (json.RawMessage, error) {
	if _, ok := ParseFormat(string(f)); !ok {
		return nil, fmt.Errorf("unknown export format %q (want %s)", f, FormatNames())
	}
	defs := []json.RawMessage{}
	for i, p := range pages {
		var page []json.RawMessage
		if f == Gemini {
			var g struct {
				FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
			}
			if err := json.Unmarshal(p, &g); err != nil {
				return nil, fmt.Errorf("page %d is not a %s tools object: %w", i+1, f, err)
			}
			page = g.FunctionDeclarations
		} else if err := json.Unmarshal(p, &page); err != nil {
			return nil, fmt.Errorf("page %d is not a %s array of tools: %w", i+1, f, err)
		}
		defs = append(defs, page...)
	}
	var doc any = defs
	if f == Gemini {
		doc = struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		}{defs}
	}
	return json.Marshal(doc)
}
