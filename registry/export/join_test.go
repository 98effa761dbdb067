package export_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/export"
)

// TestJoinEqualsOneExport: in every format, the pages of an export joined
// are the document one export of every tool makes (so a paging client
// hands its API what an unpaged one would).
func TestJoinEqualsOneExport(t *testing.T) {
	tools := exportTools(t)
	// Pages are judged by the whole registry's names (as ExportTools
	// passes its snapshot): a page alone cannot see a name clash.
	var all []string
	for _, tl := range tools {
		all = append(all, tl.Name)
	}
	names := registry.NewExportNames(all)
	for _, f := range export.Formats() {
		whole, err := export.Export(f, tools, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 2, 3, len(tools)} {
			var pages []json.RawMessage
			for i := 0; i < len(tools); i += size {
				p, err := export.Export(f, tools[i:min(i+size, len(tools))], names)
				if err != nil {
					t.Fatal(err)
				}
				pages = append(pages, p.Document)
			}
			joined, err := export.Join(f, pages)
			if err != nil {
				t.Fatalf("%s, pages of %d: %v", f, size, err)
			}
			if !bytes.Equal(joined, whole.Document) {
				t.Errorf("%s, pages of %d joined:\n%s\nwant the whole export:\n%s", f, size, joined, whole.Document)
			}
		}
		if empty, err := export.Join(f, nil); err != nil || !json.Valid(empty) || strings.Contains(string(empty), "null") {
			t.Errorf("%s: no pages joined = %s, %v; want an empty document", f, empty, err)
		}
	}
	if _, err := export.Join(export.Gemini, []json.RawMessage{json.RawMessage(`[]`)}); err == nil {
		t.Error("an array joined as a gemini page: want an error")
	}
	if _, err := export.Join("cohere", nil); err == nil {
		t.Error("an unknown format joined: want an error")
	}
}
