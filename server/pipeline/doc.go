// Package pipeline is a tool call, independent of the transport: the Call
// (tool, call id, caller, the arguments held as received bytes and/or
// decoded, decoded lazily at most once), the one ordered list of stages
// (stages.go) both faces run, dispatch to a Backend, outcome recording
// (Recorder: audit, metrics), the visibility rule, and the one typed Error
// with its classifier.
//
// A face without an interceptor chain runs a whole call with Invoke:
//
//	p := pipeline.New(pipeline.Config{Registry: reg, Backend: be, Authz: az, RequireCaller: true})
//	c := pipeline.NewCall("create_note", "call-1", args)
//	res, err := p.Invoke(policy.WithCaller(ctx, caller), c) // err is *pipeline.Error
//
// A face with a chain calls Begin, RunStage for each stage in order,
// Dispatch and Finish instead.
//
// It imports the registry, normalize and internal/policy, and no gRPC, no
// net/http and no other server package (internal/archtest enforces that).
package pipeline
