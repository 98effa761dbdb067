// Package invokewire owns the hand-written wire formats of the invocation
// messages (proto/flowdrop/gateway/v1): it scans InvokeToolRequest, builds
// InvokeRequest around arguments already encoded (and its caller field on
// its own), reads and writes InvokeResponse, and turns an encoded
// InvokeResponse into InvokeToolResponse with the repairs and the replay
// mark. Nobody else knows their field numbers (internal/archtest holds
// that: only this package imports protowire for them).
//
// Why by hand: the hot path forwards a caller's bytes to the backend and
// the backend's bytes to the caller without decoding either; the messages
// agree on the numbers that make that possible (InvokeToolRequest and
// InvokeRequest on 1–3, InvokeResponse and InvokeToolResponse on 1, 2, 5
// and 6). Every function here is held to proto.Marshal/proto.Unmarshal by
// golden and property tests.
//
// The package imports protowire, structpb, proto and normalize only, not
// gen/: server/pipeline uses it and stays free of the generated code.
package invokewire
