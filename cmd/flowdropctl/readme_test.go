package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// readmeBlock returns the command between <!-- name --> and <!-- /name -->
// in the README's front page, its continuation lines joined.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- "+name+" -->")
	block, _, ok2 := strings.Cut(rest, "<!-- /"+name+" -->")
	if !ok || !ok2 {
		t.Fatalf("README has no <!-- %s --> block", name)
	}
	return strings.TrimSpace(strings.ReplaceAll(block, "\\\n", " "))
}

// shellWords splits a command line as a POSIX shell does for the quoting
// the README uses: single-quoted words and bare words.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '"' || r == '\\' || r == '$':
			t.Fatalf("the README's command uses shell quoting this test does not read (%q): %s", r, s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote: %s", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestREADMEFirstCalls runs the front page's two first calls, exactly as
// written, against a gateway with the demo tools and checks the answers the
// README promises: the arguments repaired, the repairs listed.
func TestREADMEFirstCalls(t *testing.T) {
	env := gatewaytest.Start(t, gatewaytest.WithMCP())

	t.Run("grpc", func(t *testing.T) {
		words := shellWords(t, readmeBlock(t, "first-grpc-call"))
		const prefix = "go run ./cmd/flowdropctl invoke"
		if got := strings.Join(words[:4], " "); got != prefix {
			t.Fatalf("the first gRPC call does not start with %q: %q", prefix, got)
		}
		var stdout, stderr bytes.Buffer
		args := append([]string{"--addr", env.Addr}, words[4:]...)
		if code := runInvoke(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, &stdout, &stderr)
		}
		for _, want := range []string{`"title": "Ember & Oak"`, `"a",`, "json-decoded /tags", "entities-decoded /title (2 passes)"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, &stdout)
			}
		}
	})

	t.Run("mcp", func(t *testing.T) {
		words := shellWords(t, readmeBlock(t, "first-mcp-call"))
		if words[0] != "curl" {
			t.Fatalf("the first MCP call is not a curl command: %q", words)
		}
		var url, body string
		header := http.Header{}
		for i := 1; i < len(words); i++ {
			switch w := words[i]; {
			case w == "-s":
			case w == "-H" && i+1 < len(words):
				k, v, _ := strings.Cut(words[i+1], ":")
				header.Add(k, strings.TrimSpace(v))
				i++
			case w == "-d" && i+1 < len(words):
				body = words[i+1]
				i++
			case strings.HasPrefix(w, "http://127.0.0.1:7444/mcp"):
				url = env.MCPURL // the demo's address, here the test gateway's
			default:
				t.Fatalf("the first MCP call has an option this test does not read: %q", w)
			}
		}
		if url == "" || body == "" {
			t.Fatalf("no URL or body in %q", words)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
		// The answer is one JSON-RPC response, as an SSE event or plain JSON.
		msg := raw
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msg = []byte(d)
			}
		}
		var rpc struct {
			Result struct {
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
				Meta              struct {
					Repairs []struct {
						Kind string `json:"kind"`
						Path string `json:"path"`
					} `json:"flowdrop/repairs"`
				} `json:"_meta"`
			} `json:"result"`
		}
		if err := json.Unmarshal(msg, &rpc); err != nil {
			t.Fatalf("answer %s: %v", raw, err)
		}
		args, _ := rpc.Result.StructuredContent["arguments"].(map[string]any)
		if rpc.Result.IsError || args["title"] != "Ember & Oak" || len(args["tags"].([]any)) != 2 {
			t.Errorf("structuredContent %v, want the repaired arguments", rpc.Result.StructuredContent)
		}
		kinds := map[string]string{}
		for _, r := range rpc.Result.Meta.Repairs {
			kinds[r.Path] = r.Kind
		}
		if kinds["/tags"] != "json-decoded" || kinds["/title"] != "entities-decoded" {
			t.Errorf("repairs %v, want /tags json-decoded and /title entities-decoded", rpc.Result.Meta.Repairs)
		}
	})
}
