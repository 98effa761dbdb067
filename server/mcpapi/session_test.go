package mcpapi

//lint:file-ignore SA1019 sampling and roots are deprecated by SEP-2577 yet declared on the revisions tested

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sealedstate"
)

// TestSessionIDs: a minted session id opens for its caller only, within
// its lifetime, under the face's keys, and holds what the caller declared.
func TestSessionIDs(t *testing.T) {
	t.Parallel()
	keys := sealedstate.Random()
	m := &Server{input: func() InputState { return InputState{Keys: keys} }, sessionTTL: time.Hour}
	alice := policy.Caller{Subject: "alice", Method: policy.MethodAPIKey}
	aliceCtx := policy.WithCaller(t.Context(), alice)
	seal := func(s faceSession) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return keys.Seal(sessionPurpose, b)
	}
	good := faceSession{Subject: "alice", Method: policy.MethodAPIKey, Revision: "2025-11-25", Issued: time.Now().Unix(), Expires: time.Now().Add(time.Hour).Unix()}
	expired := good
	expired.Expires = time.Now().Add(-time.Second).Unix()
	viaJWT := good
	viaJWT.Method = policy.MethodJWT
	bob := good
	bob.Subject = "bob"
	rows := []struct {
		reason string
		id     string
		want   string // "" : opens
	}{
		{"one sealed for this caller, in time, opens", seal(good), ""},
		{"a minted one opens", m.sealSession(aliceCtx, "2025-06-18", nil), ""},
		{"an expired one is refused", seal(expired), "expired"},
		{"the same subject authenticated another way is another caller", seal(viaJWT), "not one this gateway issued"},
		{"another subject's is refused as unknown", seal(bob), "not one this gateway issued"},
		{"one sealed under another key is unknown", sealedstate.Random().Seal(sessionPurpose, []byte(`{}`)), "not one this gateway issued"},
		{"a round state is not a session id", keys.Seal(roundPurpose, []byte(`{"s":"alice","m":"api-key","e":9999999999}`)), "not one this gateway issued"},
		{"an oversized id is refused before it is opened", strings.Repeat("A", maxSessionIDBytes+1), "not one this gateway issued"},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			s, why := m.openSession(aliceCtx, row.id)
			if row.want == "" {
				if s == nil || s.Subject != "alice" {
					t.Fatalf("got %+v, %q; want alice's session", s, why)
				}
				return
			}
			if s != nil || why != row.want {
				t.Fatalf("got %+v, %q; want refused %q", s, why, row.want)
			}
		})
	}

	t.Run("without key files no session is minted and none opens", func(t *testing.T) {
		// A per-process key would make the other replicas answer 404.
		unkeyed := &Server{input: func() InputState { return InputState{} }, randomKeys: sealedstate.Random(), sessionTTL: time.Hour}
		if id := unkeyed.sealSession(aliceCtx, "2025-11-25", nil); id != "" {
			t.Fatalf("minted %q", id)
		}
		if s, _ := unkeyed.openSession(aliceCtx, unkeyed.randomKeys.Seal(sessionPurpose, []byte(`{"s":"alice","m":"api-key","e":9999999999}`))); s != nil {
			t.Fatalf("opened %+v", s)
		}
	})

	t.Run("a caller with an overlong subject gets no session", func(t *testing.T) {
		long := policy.WithCaller(t.Context(), policy.Caller{Subject: strings.Repeat("s", maxSessionSubjectBytes+1), Method: policy.MethodJWT})
		if id := m.sealSession(long, "2025-11-25", nil); id != "" {
			t.Fatalf("minted %q", id)
		}
	})
}

// TestSessionCapabilities: what a session records of the capabilities an
// initialize declares.
func TestSessionCapabilities(t *testing.T) {
	t.Parallel()
	rows := []struct {
		reason string
		caps   string
		want   faceSession
	}{
		{"nothing declared", `{}`, faceSession{}},
		{"an empty elicitation capability is form (2025-06-18 has no modes)", `{"elicitation":{}}`, faceSession{ElicitForm: true}},
		{"url mode alone is not form", `{"elicitation":{"url":{}}}`, faceSession{ElicitURL: true}},
		{"both modes", `{"elicitation":{"form":{},"url":{}}}`, faceSession{ElicitForm: true, ElicitURL: true}},
		{"sampling and roots", `{"sampling":{},"roots":{"listChanged":true}}`, faceSession{Sampling: true, Roots: true}},
	}
	keys := sealedstate.Random()
	m := &Server{input: func() InputState { return InputState{Keys: keys} }, sessionTTL: time.Hour}
	ctx := policy.WithCaller(t.Context(), policy.Caller{Subject: "alice", Method: policy.MethodAPIKey})
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			// Decoded as the SDK's server decodes initialize's capabilities
			// (roots into RootsV2, clientCapabilitiesV2.toV1).
			var v2 clientCapabilitiesV2
			if err := json.Unmarshal([]byte(row.caps), &v2); err != nil {
				t.Fatal(err)
			}
			caps := v2.ClientCapabilities
			caps.RootsV2 = v2.Roots
			s, why := m.openSession(ctx, m.sealSession(ctx, "2025-11-25", &caps))
			if s == nil {
				t.Fatalf("minted session does not open: %s", why)
			}
			got := faceSession{ElicitForm: s.ElicitForm, ElicitURL: s.ElicitURL, Sampling: s.Sampling, Roots: s.Roots}
			if diff := cmp.Diff(row.want, got); diff != "" {
				t.Errorf("(-want +got) (%s):\n%s", row.reason, diff)
			}
			if s.Revision != "2025-11-25" || s.Expires-s.Issued != int64(time.Hour/time.Second) {
				t.Errorf("revision %q, lifetime %ds", s.Revision, s.Expires-s.Issued)
			}
		})
	}
}
