package registry_test

import (
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// TestExportName: the one documented mapping to names every provider
// takes (README "Provider-safe names").
func TestExportName(t *testing.T) {
	long := "a." + strings.Repeat("b", 62) // 64 bytes, the longest name
	cases := []struct{ name, want, reason string }{
		{"create_note", "create_note", "a safe name is its own"},
		{"run-command", "run-command", "hyphens are safe"},
		{"notes.v1.Notes.Create", "notes_v1_Notes_Create", "dots become underscores"},
		{"NotesService.CreateNote", "NotesService_CreateNote", "an imported gRPC method"},
		{"1tool", "_1tool", "Gemini wants a letter or '_' first"},
		{"-x.y", "_-x_y", "a leading hyphen too"},
		{long, "a_" + strings.Repeat("b", 62), "the length is kept"},
		{"9" + long[1:], "", "64 bytes and a leading '_' would be 65: no safe form"},
	}
	for _, tc := range cases {
		if got := registry.ExportName(tc.name); got != tc.want {
			t.Errorf("ExportName(%q) = %q, want %q (%s)", tc.name, got, tc.want, tc.reason)
		}
		if tc.want != "" && !registry.ProviderSafe(tc.want) {
			t.Errorf("%q is not provider-safe", tc.want)
		}
	}
}

// TestExportNamesConflicts: an export name is served only to the one tool
// that has it; a registered name is never taken by another's export name.
func TestExportNamesConflicts(t *testing.T) {
	x := registry.NewExportNames([]string{"a.b", "a_b", "c.d", "c.d_e", "c_d.e", "f.g", "plain"})
	cases := []struct {
		name, want string
		ok         bool
		reason     string
	}{
		{"plain", "plain", true, "its own name"},
		{"a_b", "a_b", true, "a registered name is its own export name"},
		{"a.b", "a_b", false, "its export name is another tool's registered name"},
		{"c.d", "c_d", true, "unique"},
		{"c.d_e", "c_d_e", false, "shared with c_d.e"},
		{"c_d.e", "c_d_e", false, "shared with c.d_e"},
		{"f.g", "f_g", true, "unique"},
		{"h.i", "", false, "not in the set"},
	}
	for _, tc := range cases {
		got, ok := x.ExportName(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ExportName(%q) = %q, %v; want %q, %v (%s)", tc.name, got, ok, tc.want, tc.ok, tc.reason)
		}
	}
}
