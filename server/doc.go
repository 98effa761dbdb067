// Package server is the gateway's composition root: it turns a Config into
// a running gateway and owns nothing else. Start validates the Config (one
// Validate, every rule once), opens the chosen store, seeds it, loads the
// registry, builds the policy objects, the pipeline, the backend kinds and
// the faces, and serves them on the configured addresses or on listeners
// the caller opened:
//
//	cfg := server.DefaultConfig()
//	cfg.Store.Kind, cfg.ToolsFile = server.StoreMemory, "tools.yaml"
//	cfg.Listeners.GRPC = lis                    // optional: a listener of your own
//	g, err := server.Start(ctx, cfg)
//	if err != nil { ... }                       // *server.ConfigError for a bad Config
//	defer g.Close(ctx)
//	fmt.Println(g.GRPCAddr(), g.MCPURL(), g.AdminAddr())
//
// It may import every package of the gateway; only cmd/ and test helpers
// import it (internal/archtest enforces that).
package server
