package mcpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// authenticate is the HTTP middleware in front of MCP: the same
// Authenticator as gRPC, the caller stored with policy.WithCaller (the SDK
// hands the request's context values to the method handlers). A refusal is
// 401 with a WWW-Authenticate challenge and the caller-safe policy message.
func (m *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pol := m.pipe.Policy()
		caller, err := m.authenticateHTTP(r, pol.Auth)
		if err != nil {
			m.auditAuthFailure(w, r, pol, err)
			// Whatever of the body is still unread stays so: close rather
			// than let net/http drain it to reuse the connection.
			w.Header().Set("Connection", "close")
			msg, code := "authentication failed", http.StatusUnauthorized
			challenge := `Bearer realm="flowdrop"` + m.resourceMetadataParam(pol.Auth)
			if pe, ok := policy.AsError(err); ok {
				noteRefusal(r, pe.Reason)
				msg = pe.Message
				if pe.Code != policy.Unauthenticated {
					code = http.StatusForbidden
				}
				if pe.Reason != policy.ReasonCredentialsMissing {
					// RFC 6750 §3.1: credentials were sent but are not accepted.
					challenge += `, error="invalid_token"`
				}
			}
			w.Header().Set("WWW-Authenticate", challenge)
			if pol.Auth.AcceptsAPIKeys() {
				// A second challenge (RFC 9110 §11.6.1) naming the API key
				// header, so a client does not take the Bearer challenge as
				// a request to start OAuth when a key would do.
				w.Header().Add("WWW-Authenticate", `ApiKey realm="flowdrop", header="X-API-Key"`)
			}
			if code == http.StatusUnauthorized {
				if acc := pol.Auth.AcceptedHTTP(); acc != "" {
					msg += " (" + acc + ")"
				}
			}
			http.Error(w, msg, code)
			return
		}
		if a := httpAccessFrom(r.Context()); a != nil {
			a.caller, a.authBy = caller.Subject, caller.Method
		}
		// The request's calls run under the policy it was authenticated by.
		next.ServeHTTP(w, r.WithContext(pipeline.WithPolicy(policy.WithCaller(r.Context(), caller), pol)))
	})
}

// mcpPeekBytes bounds how much of a refused request's body is read to find
// its JSON-RPC method and tool name: enough for the head of an ordinary
// tools/call, and small, since the caller is unauthenticated (read within
// unauthenticatedPeekTimeout too).
const mcpPeekBytes = 4 << 10

// auditAuthFailure writes the audit line (and counts the denial) for a
// tools/call that failed authentication, as the gRPC audit interceptor does
// for InvokeTool: the same pipeline.finish, so the same sink and record.
// Other methods (initialize, tools/list, …) are not tool calls and, as on
// gRPC, are not audited. The caller is unknown; the credential is never
// read into the record (AuditRecord has no field for it).
func (m *Server) auditAuthFailure(w http.ResponseWriter, r *http.Request, pol *pipeline.Policy, err error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return
	}
	// A slow sender gets no more time than this: what arrived by then is
	// what the audit line can name.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(min(unauthenticatedPeekTimeout, m.limits.ReadTimeout)))
	peek, _ := io.ReadAll(io.LimitReader(r.Body, mcpPeekBytes))
	isCall, tool, callID := peekToolCall(peek)
	if !isCall {
		return
	}
	noteRefusedCall(r, tool, callID)
	c := pipeline.NewCall(tool, callID, nil)
	c.UsePolicy(pol)
	m.pipe.Begin(c)
	m.pipe.Finish(r.Context(), c, err)
}

// peekToolCall reports whether body (a possibly truncated JSON-RPC request)
// is a tools/call, and its tool name and flowdrop/call_id when they could be
// read. It scans tokens, so a body cut off by the peek bound still yields
// the members before the cut.
func peekToolCall(body []byte) (isCall bool, tool, callID string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false, "", ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			break
		}
		switch k {
		case "method":
			var method string
			if dec.Decode(&method) != nil {
				return isCall, tool, callID
			}
			isCall = method == "tools/call"
		case "params":
			var params struct {
				Name string         `json:"name"`
				Meta map[string]any `json:"_meta"`
			}
			if dec.Decode(&params) != nil {
				return isCall, tool, callID
			}
			tool = params.Name
			callID, _ = params.Meta[MCPMetaCallID].(string)
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return isCall, tool, callID
			}
		}
	}
	return isCall, tool, callID
}

// authenticateHTTP authenticates an HTTP request with the same
// Authenticator as gRPC: "Authorization: Bearer …" and "X-API-Key"
// headers, and the verified client certificate chain. It returns the caller
// or a *policy.Error (never echoing a credential).
func (m *Server) authenticateHTTP(r *http.Request, auth *policy.Authenticator) (policy.Caller, error) {
	if auth == nil {
		return policy.Caller{}, &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
			Message: "authentication is not configured"}
	}
	var c policy.Credentials
	c.APIKey = r.Header.Get("X-API-Key")
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		tok = strings.TrimSpace(tok)
		if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" {
			return policy.Caller{}, &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMalformed,
				Message: `authorization header must be "Bearer <api key or JWT>"`}
		}
		c.Bearer = tok
	}
	// Only a chain the handshake verified identifies a caller.
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		c.PeerCerts = r.TLS.VerifiedChains[0]
	}
	return auth.Authenticate(r.Context(), c)
}
