package server_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// TestMCPFederationSaysWhyAnUpstreamIsLeftOut: an upstream whose imported
// tools give no one prefix (one renamed after its import) and two upstreams
// imported under one prefix are not federated — none of their resources is
// listed — and the gateway says so once per upstream, naming a tool and
// why, however often callers list; an upstream under a prefix of its own
// is federated beside them.
func TestMCPFederationSaysWhyAnUpstreamIsLeftOut(t *testing.T) {
	renamed, dupA, dupB, ok := startPlainUpstream(t, "echo"), startPlainUpstream(t, "echo"), startPlainUpstream(t, "other"), startPlainUpstream(t, "echo")
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithLogOutput(logs), gatewaytest.WithPolicy(prefixlessPolicy(t)),
		importedTool("rn_echo", renamed.url, "echo"), importedTool("my_tool", renamed.url, "echo"),
		importedTool("dup_echo", dupA.url, "echo"), importedTool("dup_other", dupB.url, "other"),
		importedTool("ok_echo", ok.url, "echo"))
	ctx := testCtx(t)
	var uris []string
	list := func() error {
		cs, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})
		if err != nil {
			return err
		}
		defer cs.Close()
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			return err
		}
		uris = uris[:0]
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		if !strings.Contains(strings.Join(uris, " "), "flowdrop-mcp://ok_/doc://a") {
			return errors.New("ok_'s document not listed yet")
		}
		return nil
	}
	// A session declares resources once the face has read an upstream's
	// capabilities (in the background of the first initialize).
	if err := poll(20*time.Second, list); err != nil {
		t.Fatalf("ok_'s resources were never listed: %v (listed %v)", err, uris)
	}
	for range 3 {
		if err := list(); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range uris {
		if !strings.HasPrefix(u, "flowdrop-mcp://ok_/") {
			t.Errorf("listed %q: only the upstream under a prefix of its own is federated", u)
		}
	}
	l := logs.String()
	for _, want := range []struct{ reason, why, tool string }{
		{"the renamed tool's upstream", "more than one prefix", "rn_echo|my_tool"},
		{"the first upstream under dup_", "under the same prefix", "dup_echo"},
		{"the second upstream under dup_", "under the same prefix", "dup_other"},
	} {
		n := 0
		for _, line := range strings.Split(l, "\n") {
			if !strings.Contains(line, "an upstream is not federated") || !strings.Contains(line, want.why) {
				continue
			}
			for _, tool := range strings.Split(want.tool, "|") {
				if strings.Contains(line, "tool="+tool) {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d WARN lines saying %q, want one naming %s:\n%s", want.reason, n, want.why, want.tool, l)
		}
	}
}
