package invokewire_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"testing/quick"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// property runs check on random messages drawn from quick's seeds; a
// failure names the seed, which reproduces the message.
func property(t *testing.T, check func(t *testing.T, r *rand.Rand)) {
	t.Helper()
	err := quick.Check(func(seed uint64) bool {
		r := rand.New(rand.NewPCG(seed, seed>>1|1))
		ok := true
		t.Run("", func(t *testing.T) {
			check(t, r)
			if t.Failed() {
				t.Logf("seed %d", seed)
				ok = false
			}
		})
		return ok
	}, &quick.Config{MaxCount: 300})
	if err != nil {
		t.Error(err)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := deterministic.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequestBuiltAroundArgumentsIsMarshal: BeginRequest/FinishRequest make
// proto.Marshal's InvokeRequest bytes for any tool, arguments and call id,
// whatever the size hint said.
func TestRequestBuiltAroundArgumentsIsMarshal(t *testing.T) {
	t.Parallel()
	property(t, func(t *testing.T, r *rand.Rand) {
		tool, callID, args := randString(r), randString(r), randStruct(r, 3)
		ab := mustMarshal(t, args)
		head := invokewire.BeginRequest(tool, []int{0, len(ab), len(ab) * 3}[r.IntN(3)], callID)
		msg, got := invokewire.FinishRequest(append(head, ab...), len(head), callID)
		if want := mustMarshal(t, &gatewayv1.InvokeRequest{Tool: tool, Arguments: args, CallId: callID}); !bytes.Equal(msg, want) {
			t.Errorf("request\n got % x\nwant % x", msg, want)
		}
		if !bytes.Equal(got, ab) || cap(got) != len(got) {
			t.Errorf("the arguments within the request: % x (cap %d), want % x, full", got, cap(got), ab)
		}
	})
}

// TestCallerFieldIsMarshal: CallerField is proto.Marshal's bytes of
// InvokeRequest{caller}, which follow fields 1–3 on the wire.
func TestCallerFieldIsMarshal(t *testing.T) {
	t.Parallel()
	property(t, func(t *testing.T, r *rand.Rand) {
		c := &gatewayv1.Caller{Subject: randString(r), Method: randString(r)}
		for range r.IntN(4) {
			c.Roles = append(c.Roles, randString(r))
		}
		got, err := invokewire.CallerField(c.Subject, c.Method, c.Roles)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustMarshal(t, &gatewayv1.InvokeRequest{Caller: c}); !bytes.Equal(got, want) {
			t.Errorf("caller %v\n got % x\nwant % x", c, got, want)
		}
	})
}

// TestScanToolRequestIsUnmarshal: ScanToolRequest reads proto.Marshal's
// InvokeToolRequest as proto.Unmarshal does, and takes it only without
// arguments_json.
func TestScanToolRequestIsUnmarshal(t *testing.T) {
	t.Parallel()
	property(t, func(t *testing.T, r *rand.Rand) {
		req := &gatewayv1.InvokeToolRequest{Tool: randString(r), CallId: randString(r), IdempotencyKey: randString(r)}
		if r.IntN(4) > 0 {
			req.Arguments = randStruct(r, 3)
		}
		if r.IntN(4) == 0 {
			req.ArgumentsJson = `{"a":1}`
		}
		b := mustMarshal(t, req)
		got, ok := invokewire.ScanToolRequest(b)
		if ok != (req.ArgumentsJson == "") {
			t.Fatalf("scan of %v: ok %v", req, ok)
		}
		if !ok {
			return
		}
		var args *structpb.Struct
		if got.HasArgs {
			args = new(structpb.Struct)
			if err := proto.Unmarshal(got.Args, args); err != nil {
				t.Fatal(err)
			}
		}
		dec := &gatewayv1.InvokeToolRequest{Tool: got.Tool, CallId: got.CallID, IdempotencyKey: got.IdempotencyKey, Arguments: args}
		if d := cmp.Diff(req, dec, protocmp.Transform()); d != "" {
			t.Errorf("scan differs from the message (-want +got):\n%s", d)
		}
		if got.HasKey != (req.IdempotencyKey != "") || got.IsBackendHead() == got.HasKey {
			t.Errorf("HasKey %v, IsBackendHead %v for key %q", got.HasKey, got.IsBackendHead(), req.IdempotencyKey)
		}
	})
}

func randResponse(r *rand.Rand, full bool) *gatewayv1.InvokeResponse {
	resp := &gatewayv1.InvokeResponse{Result: maybeValue(r), IsError: r.IntN(2) == 0}
	if full {
		resp.Content, resp.Meta = randContent(r), randMeta(r)
	}
	return resp
}

// TestResponseCodecIsProto: on InvokeResponse as proto.Marshal writes it,
// IsPlainResponse says whether anything but result and is_error is there,
// ResponseResult reads them as proto.Unmarshal does, and EncodeResponse of
// them is proto.Marshal's deterministic bytes.
func TestResponseCodecIsProto(t *testing.T) {
	t.Parallel()
	property(t, func(t *testing.T, r *rand.Rand) {
		resp := randResponse(r, r.IntN(2) == 0)
		b := mustMarshal(t, resp)
		if plain := len(resp.Content) == 0 && resp.Meta == nil; invokewire.IsPlainResponse(b) != plain {
			t.Errorf("IsPlainResponse(%v) = %v", resp, !plain)
		}
		v, isError, ok := invokewire.ResponseResult(b)
		if !ok || isError != resp.IsError {
			t.Fatalf("ResponseResult: ok %v, is_error %v; want %v", ok, isError, resp.IsError)
		}
		if d := cmp.Diff(resp.Result, v, protocmp.Transform()); d != "" {
			t.Errorf("result (-want +got):\n%s", d)
		}
		if want := mustMarshal(t, &gatewayv1.InvokeResponse{Result: resp.Result, IsError: resp.IsError}); !bytes.Equal(invokewire.EncodeResponse(resp.Result, resp.IsError), want) {
			t.Errorf("EncodeResponse differs from proto.Marshal")
		}
	})
}

// TestToolResponseIsMarshal: ToolResponse of an encoded InvokeResponse
// decodes as the InvokeToolResponse proto.Marshal would build with the
// repairs and the mark, and is its bytes when there is no content or meta
// (which proto.Marshal writes after them).
func TestToolResponseIsMarshal(t *testing.T) {
	t.Parallel()
	property(t, func(t *testing.T, r *rand.Rand) {
		resp := randResponse(r, r.IntN(2) == 0)
		repairs, replayed := randRepairs(r), r.IntN(2) == 0
		b := mustMarshal(t, resp)
		got := invokewire.ToolResponse(b, repairs, replayed)
		want := &gatewayv1.InvokeToolResponse{Result: resp.Result, IsError: resp.IsError, Content: resp.Content, Meta: resp.Meta,
			Repairs: repairsProto(repairs), Replayed: replayed}
		dec := new(gatewayv1.InvokeToolResponse)
		if err := proto.Unmarshal(got, dec); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, dec, protocmp.Transform()); d != "" {
			t.Errorf("decoded (-want +got):\n%s", d)
		}
		if len(resp.Content) == 0 && resp.Meta == nil && !bytes.Equal(got, mustMarshal(t, want)) {
			t.Errorf("bytes differ from proto.Marshal's")
		}
		if len(b) > 0 && len(got) > len(b) && &got[0] == &b[0] {
			t.Errorf("the backend's bytes were appended to in place")
		}
	})
}

// TestCallerFieldRefusesInvalidUTF8: a caller string that is not UTF-8 is
// an error, as proto.Marshal gives (proto3 strings), not bytes a backend
// would refuse to decode.
func TestCallerFieldRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason, subject, method string
		roles                   []string
	}{
		{"the subject", "bad\xff", "api-key", nil},
		{"the method", "s", "\xc3", nil},
		{"a role", "s", "jwt", []string{"ok", "\xfe"}},
	} {
		if _, err := invokewire.CallerField(tc.subject, tc.method, tc.roles); err == nil {
			t.Errorf("invalid UTF-8 in %s: want an error", tc.reason)
		}
		if _, err := proto.Marshal(&gatewayv1.InvokeRequest{Caller: &gatewayv1.Caller{Subject: tc.subject, Method: tc.method, Roles: tc.roles}}); err == nil {
			t.Errorf("invalid UTF-8 in %s: proto.Marshal takes it, so should CallerField", tc.reason)
		}
	}
}
