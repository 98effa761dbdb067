// Package backend holds the backend kinds: implementations of
// pipeline.Backend, the seam a call that passed every stage is carried out
// through. ToolService is the kind of a tool whose backend is a gRPC
// target serving flowdrop.gateway.v1.ToolBackendService: one pooled
// connection per target, the deadline budget, metadata, and the received
// request bytes forwarded unchanged when nothing changed them. Each kind
// classifies its own transport's failures into *pipeline.Error values.
//
// It imports the pipeline, gRPC and the generated contract, never a face.
package backend
