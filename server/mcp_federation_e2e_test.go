package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// everythingDir is @modelcontextprotocol/server-everything as
// tools/mcpclients pins it (npm ci there).
const everythingDir = "../tools/mcpclients/node_modules/@modelcontextprotocol/server-everything"

// everythingNode is server-everything's Node and script
// (gatewaytest.Everything).
func everythingNode(t *testing.T) (node, script string) { return gatewaytest.Everything(t) }

// startEverythingHTTP runs server-everything over streamable HTTP and
// returns its URL.
func startEverythingHTTP(t *testing.T, node, script string) string {
	return "http://" + gatewaytest.StartEverything(t, node, script, "streamableHttp") + "/mcp"
}

// The face URIs the tests read: one document of each upstream, one over
// the 8 KiB backend receive limit, one the agent's resource deny list
// refuses, and a template.
const (
	evDoc    = "flowdrop-mcp://ev_/demo://resource/static/document/architecture.md"
	stDoc    = "flowdrop-mcp://st_/demo://resource/static/document/architecture.md"
	evBig    = "flowdrop-mcp://ev_/demo://resource/static/document/structure.md"
	stBig    = "flowdrop-mcp://st_/demo://resource/static/document/structure.md"
	evDenied = "flowdrop-mcp://ev_/demo://resource/static/document/extension.md"
	evTmpl   = "flowdrop-mcp://ev_/demo://resource/dynamic/text/{resourceId}"
)

// federation is a gateway fronting server-everything over streamable HTTP
// (its tool echo imported as ev_echo) and over stdio (st_echo), with an
// audit log, a backend receive limit of 8 KiB, and three callers: agent
// (both upstreams' tools, every resource but extension.md), denied (every
// resource URI allowed, but ev_'s tools denied: that upstream is out of
// its view) and toolsOnly (every tool, no resource allow list).
type federation struct {
	env                      *gatewaytest.Env
	ctx                      context.Context
	audit, httpURL           string
	agent, denied, toolsOnly *mcp.ClientSession
	connect                  func(key, version string) *mcp.ClientSession
	answers                  []string
	logs                     *syncBuffer // the gateway's log
}

func startFederation(t *testing.T, features ...federationFeature) *federation {
	t.Helper()
	node, script := everythingNode(t)
	f := &federation{httpURL: startEverythingHTTP(t, node, script), audit: filepath.Join(t.TempDir(), "audit.jsonl"), logs: &syncBuffer{}}
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "denied", SHA256: policy.HashAPIKey("denied-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "toolsonly", SHA256: policy.HashAPIKey("toolsonly-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"agent":     {Allow: []string{"ev_*", "st_*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}, Deny: []string{"*/extension.md"}}},
		"denied":    {Allow: []string{"*"}, Deny: []string{"ev_*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
		"toolsonly": {Allow: []string{"*"}},
	}}
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
	p.Audit = server.AuditConfig{Path: f.audit}
	imported := func(name, url, tool string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: tool}}}
		})
	}
	opts := []gatewaytest.Option{gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), gatewaytest.WithLogOutput(f.logs),
		imported("ev_echo", f.httpURL, "echo"), imported("st_echo", "stdio://everything", "echo"),
		gatewaytest.WithConfig(func(c *server.Config) { c.BackendMaxRecvMsgSize = 8 << 10 })}
	if slices.Contains(features, federateLongRunning) {
		opts = append(opts, imported(evLong, f.httpURL, "trigger-long-running-operation"))
	}
	f.env = gatewaytest.Start(t, opts...)
	f.ctx = testCtx(t)
	f.connect = func(key, version string) *mcp.ClientSession {
		return mustConnect(t, f.ctx, f.env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer " + key}}, version: version})
	}
	// Both upstreams up before the tests start: a stdio server's first
	// start may take seconds on a loaded machine, and what the gateway
	// declares waits at most 5 s for an upstream.
	if err := poll(60*time.Second, func() error {
		cs, err := mcpConnect(t, f.ctx, f.env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})
		if err != nil {
			return err
		}
		defer cs.Close()
		list, err := cs.ListResources(f.ctx, nil)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(list)
		if !strings.Contains(string(b), evDoc) || !strings.Contains(string(b), stDoc) {
			return fmt.Errorf("both upstreams' resources are not listed yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the upstreams did not come up: %v\nthe gateway's log:\n%s", err, f.logs.String())
	}
	f.agent, f.denied, f.toolsOnly = f.connect("agent-key", ""), f.connect("denied-key", ""), f.connect("toolsonly-key", "")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("the gateway's log:\n" + f.logs.String())
		}
	})
	return f
}

// federationFeature is what a test adds to startFederation's gateway.
type federationFeature int

// federateLongRunning imports server-everything's
// trigger-long-running-operation over streamable HTTP as evLong, for
// progress.
const federateLongRunning federationFeature = iota

// evLong is named as the importer names it under the ev_ prefix: a
// renamed tool would leave the upstream without one prefix to read back,
// and so out of the federation.
const evLong = "ev_trigger-long-running-operation"

// stdioStarts is how many times the gateway started the stdio server.
func (f *federation) stdioStarts() int {
	return strings.Count(f.logs.String(), "mcp stdio server started")
}

// keep remembers an answer, for checkNoUpstreamNamed.
func (f *federation) keep(v any) {
	b, _ := json.Marshal(v)
	f.answers = append(f.answers, string(b))
}

// rpcCode is err's JSON-RPC code (0: none); its message is kept.
func (f *federation) rpcCode(err error) int64 {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		f.keep(e.Message)
		return e.Code
	}
	return 0
}

// checkNoUpstreamNamed: no answer kept names an upstream's address.
func (f *federation) checkNoUpstreamNamed(t *testing.T) {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(f.httpURL, "http://"), "/mcp")
	for _, a := range f.answers {
		if strings.Contains(a, host) || strings.Contains(a, "stdio://") {
			t.Fatalf("an answer names the upstream: %s", a)
		}
	}
}

// federatedAudit is a federated request's audit line.
type federatedAudit struct{ op, tool, decision, args string }

// auditLines closes the gateway and returns its federated audit lines.
func (f *federation) auditLines(t *testing.T) []federatedAudit {
	t.Helper()
	lines, _ := auditLines(t, f.env, f.audit)
	var got []federatedAudit
	for _, l := range lines {
		if op, _ := l["operation"].(string); op == "resources/read" || op == "prompts/get" {
			args, _ := json.Marshal(l["args_sent"])
			got = append(got, federatedAudit{op, l["tool"].(string), l["decision"].(string), string(args)})
		}
	}
	return got
}
