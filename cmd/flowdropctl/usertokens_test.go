package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/grpcapi"
	"github.com/flowdrop/gateway/server/identity"
)

// startUserTokensGateway serves the registry service with a user-consent
// mode whose bolt store holds the given (subject, client) rows.
func startUserTokensGateway(t *testing.T, rows ...identity.TokenEntry) (addr string, store *identity.BoltTokenStore) {
	t.Helper()
	dir := t.TempDir()
	store, err := identity.OpenBoltTokenStore(filepath.Join(dir, "tokens.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	for _, r := range rows {
		// The rows' content is the consent's sealed token; listing and
		// revoking never open it.
		if err := store.Put(ctx, r.Subject, r.Client, []byte("sealed-"+r.Subject), 100); err != nil {
			t.Fatal(err)
		}
	}
	key, secret := filepath.Join(dir, "key"), filepath.Join(dir, "secret")
	os.WriteFile(key, []byte(base64.StdEncoding.EncodeToString(make([]byte, 32))), 0o600)
	os.WriteFile(secret, []byte("s"), 0o600)
	k, err := identity.NewConsent(identity.ConsentConfig{RedirectURL: "http://127.0.0.1:1/oauth/upstream/callback", KeyFiles: []string{key},
		BoltFile: "unused", Store: store,
		Clients: []identity.OAuthClient{{Name: "github", AuthURL: "https://a.example/authorize", TokenURL: "https://a.example/token", ClientID: "c", ClientSecretFile: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(memstore.New())
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := reg.Start(sctx); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	stop := grpcapi.RegisterRegistryService(gs, reg, grpcapi.WithUserTokens(func() *identity.Consent { return k }))
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(lis) }()
	t.Cleanup(func() { stop(); gs.Stop(); <-served; reg.Close() })
	return lis.Addr().String(), store
}

// TestUserTokensListRevoke: list shows subjects and clients (filtered),
// never a token; revoke removes a subject's tokens at one client or all;
// a gateway without user_consent answers FailedPrecondition.
func TestUserTokensListRevoke(t *testing.T) {
	gw, store := startUserTokensGateway(t, identity.TokenEntry{Subject: "alice", Client: "github"},
		identity.TokenEntry{Subject: "alice", Client: "jira"}, identity.TokenEntry{Subject: "bob", Client: "github"})
	code, out, errOut := ctl(t, "usertokens", "list", "--addr", gw)
	var rows []string
	for line := range strings.Lines(out) {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	if code != 0 || strings.Join(rows, ",") != "SUBJECT CLIENT,alice github,bob github,alice jira" || strings.Contains(out, "sealed-") {
		t.Fatalf("list: exit %d\n%s%s\nwant the three pairs and no token", code, out, errOut)
	}
	code, out, _ = ctl(t, "usertokens", "list", "--subject", "alice", "--client", "jira", "--output", "json", "--addr", gw)
	var got struct {
		Tokens []map[string]string `json:"tokens"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Tokens) != 1 || got.Tokens[0]["client"] != "jira" {
		t.Fatalf("filtered list: exit %d %s", code, out)
	}
	if code, out, errOut := ctl(t, "usertokens", "revoke", "alice", "--client", "github", "--addr", gw); code != 0 || !strings.Contains(out, "revoked 1 token(s) of alice") {
		t.Fatalf("revoke at one client: exit %d %s%s", code, out, errOut)
	}
	if _, err := store.Get(context.Background(), "alice", "jira"); err != nil {
		t.Fatal("revoking alice's github token removed her jira one")
	}
	if code, out, _ := ctl(t, "usertokens", "revoke", "alice", "--addr", gw); code != 0 || !strings.Contains(out, "revoked 1 ") {
		t.Fatalf("revoke at every client: exit %d %s", code, out)
	}
	if rest, _ := store.List(context.Background(), 10); len(rest) != 1 || rest[0].Subject != "bob" {
		t.Fatalf("after revoking alice: %v; want bob's only", rest)
	}
	if code, _, errOut := ctl(t, "usertokens", "revoke", "--addr", gw); code != 2 {
		t.Fatalf("revoke without a subject: exit %d %s; want a usage error", code, errOut)
	}
	code, _, errOut = ctl(t, "usertokens", "list", "--addr", startRegistryGateway(t))
	if code != 1 || !strings.Contains(errOut, "FailedPrecondition") || !strings.Contains(errOut, "user_consent is not configured") {
		t.Fatalf("list without user_consent: exit %d %s", code, errOut)
	}
}
