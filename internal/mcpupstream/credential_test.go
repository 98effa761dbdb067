package mcpupstream

import (
	"strings"
	"testing"
)

func TestParseCredential(t *testing.T) {
	cases := []struct {
		name, reason, text string
		want               Header
		wantErr            string
	}{
		{name: "bearer", reason: "a bare token is a bearer token", text: "tok-123\n",
			want: Header{"Authorization", "Bearer tok-123"}},
		{name: "header", reason: "one Header: value line is that header, canonicalized", text: "x-api-key: k1\n",
			want: Header{"X-Api-Key", "k1"}},
		{name: "authorization", reason: "an Authorization line is taken as written (another scheme)", text: "Authorization: Basic dTpw",
			want: Header{"Authorization", "Basic dTpw"}},
		{name: "first-line", reason: "only the first line counts (a trailing comment line is not sent)", text: "\n tok-1 \nsecond",
			want: Header{"Authorization", "Bearer tok-1"}},
		{name: "empty", reason: "an empty file is refused, not sent as an empty token", text: " \n", wantErr: "empty"},
		{name: "no-value", reason: "a header with no value is refused", text: "X-Key:   ", wantErr: "no value"},
		{name: "spaces", reason: "words with spaces are neither a token nor a header; the text is not quoted", text: "my secret words",
			wantErr: "neither"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCredential(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Errorf("ParseCredential: %v, want an error with %q not quoting the text (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseCredential = %+v, %v; want %+v (%s)", got, err, tc.want, tc.reason)
			}
		})
	}
}
