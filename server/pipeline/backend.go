package pipeline

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Backend carries out a call that passed every stage: the seam every
// backend kind plugs into (server/backend). It returns the tool's answer
// or an error (any error; Classify makes it an *Error — a kind classifies
// its own transport's failures by returning *Error values).
type Backend interface {
	Invoke(ctx context.Context, c *Call) (Result, error)
}

// Result is a tool's answer.
type Result struct {
	// Value and IsError are the answer, decoded. Both are unset when
	// Encoded carries the answer instead.
	Value   *structpb.Value
	IsError bool
	// Encoded is the answer as a flowdrop.gateway.v1.InvokeResponse: the
	// backend's bytes when they hold only result and is_error
	// (invokewire.IsPlainResponse), or an answer in MCP's content model
	// encoded by its backend kind (content and meta as well). A face reads
	// or extends the bytes with internal/invokewire (InvokeToolResponse
	// shares those fields), never by field number.
	Encoded []byte
	// Decoded is Encoded decoded, when the backend kind that encoded the
	// answer kept it (an MCP upstream's answer, a *gatewayv1.InvokeResponse
	// here typed as a message, the pipeline knowing no contract): a face
	// reads it rather than decoding Encoded again. It is the same answer or
	// absent: whatever gives another answer (a guard, a replay, fail-closed
	// audit) makes another Result, without it. Read only.
	Decoded proto.Message
	// Replayed: the answer is an earlier call's stored outcome under the
	// same idempotency key (the backend was not called).
	Replayed bool
	// InputRequired: the backend's upstream asked the caller for input
	// (Call.Input holds the round); there is no answer yet.
	InputRequired bool
}
