package policy

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

func TestPolicyLimits(t *testing.T) {
	l := Limits{MaxArgumentBytes: 200, MaxStringLength: 16, MaxDepth: 3}
	cases := []struct {
		reason     string
		args       string
		wantReason string
		wantLimit  string
		wantAt     string
	}{
		{"within every limit", `{"a":"short","b":{"c":[1,2]}}`, "", "", ""},
		{"too many bytes", manyFields(12, 15), ReasonLimitArgumentSize, "max_argument_bytes", ""},
		{"just under the byte limit", manyFields(7, 15), "", "", ""},
		{"long string value", `{"a":{"b":"` + strings.Repeat("x", 17) + `"}}`, ReasonLimitStringLength, "max_string_length", "/a/b"},
		{"long key", `{"` + strings.Repeat("k", 17) + `":1}`, ReasonLimitStringLength, "max_string_length", "/" + strings.Repeat("k", 17)},
		{"long string in a list", `{"a":["ok","` + strings.Repeat("x", 17) + `"]}`, ReasonLimitStringLength, "max_string_length", "/a/1"},
		{"depth 3 is fine", `{"a":{"b":{"c":1}}}`, "", "", ""},
		{"depth 4 via objects", `{"a":{"b":{"c":{"d":1}}}}`, ReasonLimitDepth, "max_depth", "/a/b/c"},
		{"depth 4 via lists", `{"a":[[[1]]]}`, ReasonLimitDepth, "max_depth", "/a/0/0"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := l.Check("tool.x", mustStruct(t, tc.args))
			if tc.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			pe := wantPolicyError(t, err, InvalidArgument, tc.wantReason)
			if pe.Limit != tc.wantLimit || !strings.Contains(pe.Message, tc.wantLimit) || !strings.Contains(pe.Message, "tool.x") {
				t.Fatalf("refusal does not name limit %q and the tool: %+v", tc.wantLimit, pe)
			}
			if tc.wantAt != "" && !strings.Contains(pe.Message, tc.wantAt) {
				t.Fatalf("refusal does not point at %s: %q", tc.wantAt, pe.Message)
			}
		})
	}
	if err := (Limits{}).Check("t", mustStruct(t, `{"a":[[[[[["`+strings.Repeat("x", 1000)+`"]]]]]]}`)); err != nil {
		t.Fatalf("zero Limits must not limit: %v", err)
	}
}

func TestPolicyInFlight(t *testing.T) {
	f := NewInFlight(2)
	r1, err := f.Acquire("slow")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := f.Acquire("slow")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Acquire("slow")
	pe := wantPolicyError(t, err, ResourceExhausted, ReasonLimitInFlight)
	if pe.Limit != "max_in_flight_per_tool" || pe.Tool != "slow" {
		t.Fatalf("%+v", pe)
	}
	if r, err := f.Acquire("other"); err != nil {
		t.Fatalf("limit must be per tool: %v", err)
	} else {
		r()
	}
	r1()
	r1() // idempotent: must not free a second slot
	r3, err := f.Acquire("slow")
	if err != nil {
		t.Fatalf("slot not freed by release: %v", err)
	}
	if _, err := f.Acquire("slow"); err == nil {
		t.Fatal("double release freed an extra slot")
	}
	r2()
	r3()
	if n := len(f.n); n != 0 {
		t.Fatalf("idle tools left in the map: %d", n)
	}
}

func TestPolicyInFlightConcurrent(t *testing.T) {
	const limit, workers = 3, 32
	f := NewInFlight(limit)
	var mu sync.Mutex
	cur, peak := 0, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				rel, err := f.Acquire("t")
				if err != nil {
					continue
				}
				mu.Lock()
				cur++
				peak = max(peak, cur)
				mu.Unlock()
				mu.Lock()
				cur--
				mu.Unlock()
				rel()
			}
		}()
	}
	wg.Wait()
	if peak > limit {
		t.Fatalf("peak in flight %d > limit %d", peak, limit)
	}
}

// TestPolicyInFlightEnterLeave: Enter and Leave keep the limit as Acquire
// does — per tool, a slot freed by Leave, no idle tool left in the map, no
// limit when unlimited or absent — and allocate nothing per call.
func TestPolicyInFlightEnterLeave(t *testing.T) {
	f := NewInFlight(2)
	for range 2 {
		if err := f.Enter("slow"); err != nil {
			t.Fatal(err)
		}
	}
	pe := wantPolicyError(t, f.Enter("slow"), ResourceExhausted, ReasonLimitInFlight)
	if pe.Limit != "max_in_flight_per_tool" || pe.Tool != "slow" {
		t.Fatalf("%+v", pe)
	}
	if _, err := f.Acquire("slow"); err == nil {
		t.Fatal("Acquire ignored the slots Enter took")
	}
	if err := f.Enter("other"); err != nil {
		t.Fatalf("limit must be per tool: %v", err)
	}
	f.Leave("other")
	f.Leave("slow")
	if err := f.Enter("slow"); err != nil {
		t.Fatalf("slot not freed by Leave: %v", err)
	}
	f.Leave("slow")
	f.Leave("slow")
	if n := len(f.n); n != 0 {
		t.Fatalf("idle tools left in the map: %d", n)
	}
	for _, g := range []*InFlight{nil, NewInFlight(0)} {
		for range 3 {
			if err := g.Enter("t"); err != nil {
				t.Fatalf("unlimited refused: %v", err)
			}
		}
		g.Leave("t")
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := f.Enter("slow"); err != nil {
			t.Fatal(err)
		}
		f.Leave("slow")
	}); n != 0 {
		t.Fatalf("Enter and Leave allocate %.0f times a call, want none", n)
	}
}

func TestPolicyRateLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	rl, err := NewRateLimiter(RateLimitConfig{Rate: 2, Burst: 3}, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	alice := Caller{Subject: "alice", Method: MethodAPIKey}
	bob := Caller{Subject: "bob", Method: MethodAPIKey}
	for i := range 3 {
		if err := rl.Allow(context.Background(), alice, "fs.read"); err != nil {
			t.Fatalf("call %d within burst refused: %v", i, err)
		}
	}
	err = rl.Allow(context.Background(), alice, "fs.read")
	pe := wantPolicyError(t, err, ResourceExhausted, ReasonRateLimited)
	if pe.RetryAfter <= 0 || pe.RetryAfter > 500*time.Millisecond {
		t.Fatalf("RetryAfter = %v, want (0, 500ms] at 2/s", pe.RetryAfter)
	}
	if pe.Tool != "fs.read" || pe.Limit != "rate" {
		t.Fatalf("%+v", pe)
	}
	// Buckets are per caller × tool.
	if err := rl.Allow(context.Background(), alice, "fs.write"); err != nil {
		t.Fatalf("other tool shares the bucket: %v", err)
	}
	if err := rl.Allow(context.Background(), bob, "fs.read"); err != nil {
		t.Fatalf("other caller shares the bucket: %v", err)
	}
	// A refused call consumed nothing: after RetryAfter exactly one token is back.
	now = now.Add(pe.RetryAfter)
	if err := rl.Allow(context.Background(), alice, "fs.read"); err != nil {
		t.Fatalf("token not back after RetryAfter: %v", err)
	}
	if err := rl.Allow(context.Background(), alice, "fs.read"); err == nil {
		t.Fatal("second token appeared early")
	}
}

func TestPolicyRateLimitBoundedAndEvictsIdle(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	rl, err := NewRateLimiter(RateLimitConfig{Rate: 1, Burst: 1, MaxBuckets: 4, IdleTimeout: time.Minute},
		WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := rl.Allow(context.Background(), Caller{Subject: s}, "t"); err != nil {
			t.Fatal(err)
		}
	}
	if n := rl.Len(); n != 4 {
		t.Fatalf("buckets = %d, want bounded at 4", n)
	}
	now = now.Add(2 * time.Minute)
	if err := rl.Allow(context.Background(), Caller{Subject: "g"}, "t"); err != nil {
		t.Fatal(err)
	}
	if n := rl.Len(); n != 1 {
		t.Fatalf("buckets = %d after idle timeout, want 1", n)
	}
	if _, err := NewRateLimiter(RateLimitConfig{Rate: 1}); err == nil {
		t.Fatal("burst 0 with a rate accepted")
	}
}

// TestPolicyRateLimitPerTool: overrides give matching tools their own rate
// and burst (first match wins), apply without a default rate, and are
// checked when built.
func TestPolicyRateLimitPerTool(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := WithClock(func() time.Time { return now })
	alice := Caller{Subject: "alice", Method: MethodAPIKey}
	burstOf := func(rl *RateLimiter, tool string) int {
		t.Helper()
		for n := range 100 {
			if err := rl.Allow(context.Background(), alice, tool); err != nil {
				pe := wantPolicyError(t, err, ResourceExhausted, ReasonRateLimited)
				if pe.Tool != tool {
					t.Errorf("refusal names tool %q, want %q", pe.Tool, tool)
				}
				return n
			}
		}
		return -1 // unlimited
	}
	rl, err := NewRateLimiter(RateLimitConfig{Rate: 5, Burst: 4, Tools: []ToolRate{
		{Match: "run_command", Rate: 1, Burst: 1},
		{Match: "run_*", Rate: 1, Burst: 2}, // run_command matched above first
	}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, reason string
		burst        int
	}{
		{"run_command", "the exact override, listed first", 1},
		{"run_script", "the glob override", 2},
		{"create_note", "no override: the default", 4},
	} {
		if got := burstOf(rl, tc.tool); got != tc.burst {
			t.Errorf("%s: %d calls allowed at once, want %d (%s)", tc.tool, got, tc.burst, tc.reason)
		}
	}
	if err := rl.Allow(context.Background(), alice, "run_command"); err == nil || !strings.Contains(err.Error(), "1/s, burst 1") {
		t.Errorf("refusal %v: want the override's limit named", err)
	}

	only, err := NewRateLimiter(RateLimitConfig{Tools: []ToolRate{{Match: "run_*", Rate: 1, Burst: 1}}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	if got := burstOf(only, "run_command"); got != 1 {
		t.Errorf("override without a default rate: %d calls allowed, want 1", got)
	}
	if got := burstOf(only, "create_note"); got != -1 {
		t.Errorf("no default rate and no override: %d calls allowed, want no limit", got)
	}

	for _, bad := range []ToolRate{{Match: "[", Rate: 1, Burst: 1}, {Match: "", Rate: 1, Burst: 1}, {Match: "x", Rate: 0, Burst: 1}, {Match: "x", Rate: 1, Burst: 0}, {Match: "x", Rate: math.NaN(), Burst: 1}} {
		if _, err := NewRateLimiter(RateLimitConfig{Tools: []ToolRate{bad}}); err == nil || !strings.Contains(err.Error(), "rate_limit.tools[0]") {
			t.Errorf("override %+v: err = %v, want it refused and named", bad, err)
		}
	}
}

// manyFields builds {"a":"xxx…", "b":…} with n fields of l-byte strings.
func manyFields(n, l int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"` + string(rune('a'+i)) + `":"` + strings.Repeat("x", l) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestLimitWalkSizeIsProtoSize: the size the limits walk adds up is
// proto.Size's for any arguments within the limits — every kind, empty
// keys, strings and containers, negative enum numbers, unknown fields.
func TestLimitWalkSizeIsProtoSize(t *testing.T) {
	l := Limits{}.WithDefaults()
	rapid.Check(t, func(t *rapid.T) {
		args := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for i, n := 0, rapid.IntRange(0, 6).Draw(t, "members"); i < n; i++ {
			args.Fields[rapid.StringN(0, 3, 200).Draw(t, "key")] = drawValue(t, 3)
		}
		if rapid.Bool().Draw(t, "unknown") {
			args.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 300))
		}
		w := limitWalker{l: l, tool: "t"}
		got, ok := w.object(args, 1)
		if !ok {
			t.Fatalf("walk failed on arguments within the limits: %v", w.err("t"))
		}
		if want := proto.Size(args); got != want {
			t.Fatalf("walk size %d, proto.Size %d for %v", got, want, args)
		}
	})
}

func drawValue(t *rapid.T, depth int) *structpb.Value {
	kinds := 4
	if depth > 0 {
		kinds = 6
	}
	var v *structpb.Value
	switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
	case 0:
		v = structpb.NewNullValue()
		v.Kind.(*structpb.Value_NullValue).NullValue = structpb.NullValue(rapid.Int32().Draw(t, "enum"))
	case 1:
		v = structpb.NewNumberValue(rapid.Float64().Draw(t, "number"))
	case 2:
		v = structpb.NewStringValue(rapid.StringN(0, 300, 1000).Draw(t, "string"))
	case 3:
		v = structpb.NewBoolValue(rapid.Bool().Draw(t, "bool"))
	case 4:
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "members"); i < n; i++ {
			s.Fields[rapid.StringN(0, 3, 100).Draw(t, "key")] = drawValue(t, depth-1)
		}
		v = structpb.NewStructValue(s)
	default:
		l := &structpb.ListValue{}
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "items"); i < n; i++ {
			l.Values = append(l.Values, drawValue(t, depth-1))
		}
		if rapid.Bool().Draw(t, "unknown") {
			l.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 7, protowire.BytesType), []byte("xy")))
		}
		v = structpb.NewListValue(l)
	}
	if rapid.IntRange(0, 9).Draw(t, "value unknown") == 0 {
		v.ProtoReflect().SetUnknown(protowire.AppendFixed32(protowire.AppendTag(nil, 11, protowire.Fixed32Type), 1))
	}
	return v
}
