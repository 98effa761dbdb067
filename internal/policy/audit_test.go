package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowdrop/gateway/normalize"
	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/protobuf/types/known/structpb"
)

const sensitiveSchema = `{
  "type": "object",
  "$defs": {"secret": {"type": "string", "x-sensitive": true}},
  "properties": {
    "user":     {"type": "string"},
    "password": {"type": "string", "format": "password"},
    "token":    {"type": "string", "writeOnly": true},
    "apiKey":   {"$ref": "#/$defs/secret"},
    "db": {"type": "object", "properties": {
        "host": {"type": "string"},
        "pass": {"type": "string", "writeOnly": true}}},
    "accounts": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"},
        "pin":  {"type": "string", "x-sensitive": true}}}},
    "creds": {"type": "object", "properties": {"secret": {"type": "string", "x-sensitive": true}}},
    "note": {"type": "string"}
  },
  "patternProperties": {"^x-secret-": {"x-sensitive": true}}
}`

func TestPolicyRedactor(t *testing.T) {
	red := NewRedactor(mustStruct(t, sensitiveSchema))
	in := mustStruct(t, `{
	  "user": "alice", "password": "hunter2", "token": "tok-123", "apiKey": "ak-456",
	  "db": {"host": "db1", "pass": "dbpass"},
	  "accounts": [{"name": "a", "pin": "1111"}, {"name": "b", "pin": "2222"}],
	  "creds": "{\"secret\":\"in-a-json-string\"}",
	  "x-secret-extra": "pattern-secret",
	  "note": "hello &amp; bye"}`)
	out := red.Redact(in)
	f := out.GetFields()
	cases := []struct {
		reason string
		got    *structpb.Value
		want   string
	}{
		{"plain property kept", f["user"], "alice"},
		{"format: password", f["password"], Redacted},
		{"writeOnly: true", f["token"], Redacted},
		{"x-sensitive through $ref", f["apiKey"], Redacted},
		{"nested object: sibling kept", f["db"].GetStructValue().GetFields()["host"], "db1"},
		{"nested object: writeOnly redacted", f["db"].GetStructValue().GetFields()["pass"], Redacted},
		{"array items: name kept", f["accounts"].GetListValue().GetValues()[1].GetStructValue().GetFields()["name"], "b"},
		{"array items: x-sensitive redacted (0)", f["accounts"].GetListValue().GetValues()[0].GetStructValue().GetFields()["pin"], Redacted},
		{"array items: x-sensitive redacted (1)", f["accounts"].GetListValue().GetValues()[1].GetStructValue().GetFields()["pin"], Redacted},
		{"object sent as a JSON string is redacted whole", f["creds"], Redacted},
		{"patternProperties", f["x-secret-extra"], Redacted},
		{"unrelated string kept as sent", f["note"], "hello &amp; bye"},
	}
	for _, tc := range cases {
		if got := tc.got.GetStringValue(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.reason, got, tc.want)
		}
	}
	if in.GetFields()["password"].GetStringValue() != "hunter2" {
		t.Fatal("Redact modified its input")
	}
	// Fail closed on a $ref that cannot be resolved.
	bad := NewRedactor(mustStruct(t, `{"properties":{"k":{"$ref":"#/$defs/missing"}}}`))
	if got := bad.Redact(mustStruct(t, `{"k":"v"}`)).GetFields()["k"].GetStringValue(); got != Redacted {
		t.Fatalf("unresolvable $ref: got %q, want redacted", got)
	}
	// A recursive schema terminates.
	rec := NewRedactor(mustStruct(t, `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"pw":{"writeOnly":true}}}},"$ref":"#/$defs/n"}`))
	r := rec.Redact(mustStruct(t, `{"next":{"next":{"pw":"deep"}}}`))
	if got := r.GetFields()["next"].GetStructValue().GetFields()["next"].GetStructValue().GetFields()["pw"].GetStringValue(); got != Redacted {
		t.Fatalf("recursive schema: got %q", got)
	}
}

// TestPolicyAuditLine follows one call end to end: authenticate (API key and
// JWT), normalize, write the audit record to a file, parse it back, and check
// redaction and that no credential reached the log.
func TestPolicyAuditLine(t *testing.T) {
	keys := newTestKeys(t)
	auth, err := NewAuthenticator(t.Context(), AuthConfig{Mode: AuthOn,
		APIKeys: []APIKey{{Name: "ci-bot", SHA256: HashAPIKey(secretKey), Roles: []string{RoleInvoker}}},
		JWT:     &JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSFile: keys.file(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Close()
	bearer := mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, validClaims("alice"))

	schema := mustStruct(t, sensitiveSchema)
	plan, err := normalize.Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	red := NewRedactor(schema)
	path := filepath.Join(t.TempDir(), "audit.log")
	sink, err := OpenFileSink(path, AuditSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, creds := range []Credentials{{APIKey: secretKey}, {Bearer: bearer}} {
		caller, err := auth.Authenticate(t.Context(), creds)
		if err != nil {
			t.Fatal(err)
		}
		sent := mustStruct(t, `{"user":"alice","password":"p&amp;ss","note":"a &amp;&amp; b","db":{"host":"h","pass":"dbpass"}}`)
		repaired, rep := plan.Apply(sent)
		rec := AuditRecord{Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), CallerSubject: caller.Subject, CallerMethod: caller.Method,
			Tool: "shell.run", CallID: "call-1", Decision: DecisionAllow, Repairs: RepairsFromReport(rep),
			Validation: "ok", BackendCode: "OK", LatencyMS: 1.5}
		if err := rec.SetArgs(red, sent, repaired); err != nil {
			t.Fatal(err)
		}
		if err := sink.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("audit file mode %v, want 0600", st.Mode().Perm())
	}
	for _, secret := range []string{secretKey, bearer, "p&amp;ss", "p&ss", "dbpass"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("audit log contains a secret or a sensitive value (%.12s…)", secret)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %d:\n%s", len(lines), raw)
	}
	for i, line := range lines {
		var got struct {
			Time          string `json:"time"`
			CallerSubject string `json:"caller_subject"`
			CallerMethod  string `json:"caller_method"`
			Decision      string `json:"decision"`
			Repairs       []AuditRepair
			ArgsSent      map[string]any `json:"args_sent"`
			ArgsRepaired  map[string]any `json:"args_repaired"`
			LatencyMS     float64        `json:"latency_ms"`
		}
		var loose map[string]any
		if err := json.Unmarshal([]byte(line), &loose); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		for k := range loose {
			if strings.Contains(strings.ToLower(k), "header") || strings.Contains(strings.ToLower(k), "authorization") {
				t.Fatalf("line %d has a header field %q", i, k)
			}
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		wantSubj, wantMethod := "ci-bot", MethodAPIKey
		if i == 1 {
			wantSubj, wantMethod = "alice", MethodJWT
		}
		if got.CallerSubject != wantSubj || got.CallerMethod != wantMethod || got.Decision != "allow" || got.LatencyMS != 1.5 {
			t.Fatalf("line %d: %+v", i, got)
		}
		if got.Time != "2026-01-02T03:04:05.000000006Z" {
			t.Fatalf("time %q is not RFC 3339 with nanoseconds", got.Time)
		}
		if got.ArgsSent["password"] != Redacted || got.ArgsRepaired["password"] != Redacted {
			t.Fatalf("password not redacted in both forms: sent %v repaired %v", got.ArgsSent["password"], got.ArgsRepaired["password"])
		}
		if db := got.ArgsSent["db"].(map[string]any); db["pass"] != Redacted || db["host"] != "h" {
			t.Fatalf("nested redaction: %v", db)
		}
		if got.ArgsSent["note"] != "a &amp;&amp; b" || got.ArgsRepaired["note"] != "a && b" {
			t.Fatalf("non-sensitive value must be kept as sent and as repaired: %v / %v", got.ArgsSent["note"], got.ArgsRepaired["note"])
		}
		if len(got.Repairs) == 0 || got.Repairs[0].Kind != "entities-decoded" {
			t.Fatalf("repairs: %+v", got.Repairs)
		}
	}
}

func TestPolicyAuditRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	var sinkErrs []error
	tick := time.Unix(1_700_000_000, 0)
	opt := AuditSinkOptions{RotateBytes: 300, OnError: func(err error, _ int64) { sinkErrs = append(sinkErrs, err) },
		now: func() time.Time { tick = tick.Add(time.Second); return tick }}
	sink, err := OpenFileSink(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := sink.Write(AuditRecord{Time: time.Unix(0, 0), CallerSubject: "s", Tool: "t", CallID: strings.Repeat("c", i+1), Decision: DecisionDeny, Reason: ReasonRateLimited}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sinkErrs) > 0 {
		t.Fatalf("sink errors: %v", sinkErrs)
	}
	files, _ := filepath.Glob(path + "*")
	if len(files) < 3 {
		t.Fatalf("expected several rotated files, got %v", files)
	}
	total := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: torn line %q", f, sc.Text())
			}
			total++
		}
		fh.Close()
	}
	if total != n {
		t.Fatalf("lines across rotated files = %d, want %d", total, n)
	}
}

// gateWriter blocks in Write until released, standing in for a stuck disk.
type gateWriter struct {
	entered chan struct{}
	release chan struct{}
	buf     bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return g.buf.Write(p)
}

func TestPolicyAuditStuckWriterNeverBlocksCalls(t *testing.T) {
	g := &gateWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	sink := NewWriterSink(g, AuditSinkOptions{QueueSize: 1})
	rec := AuditRecord{Tool: "t", Decision: DecisionAllow}
	if err := sink.Write(rec); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the writer goroutine holds record 1 and is stuck
	if err := sink.Write(rec); err != nil {
		t.Fatalf("record 2 should be queued: %v", err)
	}
	if err := sink.Write(rec); !errors.Is(err, ErrAuditDropped) {
		t.Fatalf("record 3: got %v, want ErrAuditDropped (and no blocking)", err)
	}
	if sink.Dropped() != 1 {
		t.Fatalf("dropped = %d", sink.Dropped())
	}
	close(g.release)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(g.buf.String(), "\n"); n != 2 {
		t.Fatalf("written lines = %d, want 2", n)
	}
	if err := sink.Write(rec); err == nil {
		t.Fatal("write after Close accepted")
	}
}

// switchWriter fails every write while fail is set.
type switchWriter struct {
	fail atomic.Bool
	mu   sync.Mutex
	n    int
}

func (w *switchWriter) Write(p []byte) (int, error) {
	if w.fail.Load() {
		return 0, errors.New("disk gone")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	return len(p), nil
}

// TestAuditSinkTellsEachHealthTransitionOnce: OnFail hears the first
// failed write after health, not every failure; OnRecover the write that
// brings it back; a second outage is told again.
func TestAuditSinkTellsEachHealthTransitionOnce(t *testing.T) {
	w := &switchWriter{}
	var mu sync.Mutex
	var events []string
	note := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	sink := NewWriterSink(w, AuditSinkOptions{retryEvery: 10 * time.Millisecond,
		OnFail: func() { note("fail") }, OnRecover: func(int64) { note("recover") }})
	defer sink.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := AuditRecord{Time: time.Now(), Tool: "t", Decision: DecisionAllow}
	waitHealthy := func() {
		t.Helper()
		for !sink.Healthy() {
			select {
			case <-ctx.Done():
				t.Fatal("the sink did not recover")
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	for range 2 {
		w.fail.Store(true)
		for range 5 {
			if err := sink.WriteWait(ctx, rec); !errors.Is(err, ErrAuditUnwritable) {
				t.Fatalf("write while failing: %v; want ErrAuditUnwritable", err)
			}
		}
		w.fail.Store(false)
		waitHealthy()
		if err := sink.WriteWait(ctx, rec); err != nil {
			t.Fatalf("write after recovery: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"fail", "recover", "fail", "recover"}; !slices.Equal(events, want) {
		t.Errorf("transitions told %v; want %v (once each, in order)", events, want)
	}
}

// TestPolicyAuditRotationRetention: KeepRotated keeps the newest rotated
// files and KeepRotatedFor drops the ones rotated longer ago than it; the
// live file and files the sink did not name are never touched.
func TestPolicyAuditRotationRetention(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		count        int
		age          time.Duration
		want         int // rotated files left
	}{
		{name: "count", reason: "only the newest two rotated files stay", count: 2, want: 2},
		{name: "age", reason: "rotations are two clock readings (a minute each) apart: files rotated over 5.5 minutes before the last pruning go", age: 330 * time.Second, want: 3},
		{name: "none", reason: "without retention every rotated file is kept", want: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.log")
			stranger := filepath.Join(dir, "audit.log.notes")
			if err := os.WriteFile(stranger, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			var sinkErrs []error
			tick := time.Unix(1_700_000_000, 0)
			opt := AuditSinkOptions{RotateBytes: 1, KeepRotated: tc.count, KeepRotatedFor: tc.age,
				OnError: func(err error, _ int64) { sinkErrs = append(sinkErrs, err) },
				now:     func() time.Time { tick = tick.Add(time.Minute); return tick }}
			sink, err := OpenFileSink(path, opt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 9 { // every line crosses RotateBytes: nine rotations
				if err := sink.Write(AuditRecord{Time: time.Unix(0, 0), Tool: "t", CallID: strconv.Itoa(i), Decision: DecisionAllow}); err != nil {
					t.Fatal(err)
				}
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			if len(sinkErrs) > 0 {
				t.Fatalf("sink errors: %v", sinkErrs)
			}
			rotated, _ := filepath.Glob(path + ".2*")
			if len(rotated) != tc.want {
				t.Errorf("%d rotated files left, want %d (%s): %v", len(rotated), tc.want, tc.reason, rotated)
			}
			if tc.want < 9 && len(rotated) > 0 {
				// The newest survive: the last line written is in the newest file.
				slices.Sort(rotated)
				b, _ := os.ReadFile(rotated[len(rotated)-1])
				if !strings.Contains(string(b), `"call_id":"8"`) {
					t.Errorf("newest rotated file %s holds %q, want the last record", rotated[len(rotated)-1], b)
				}
			}
			if _, err := os.Stat(stranger); err != nil {
				t.Errorf("a file the sink did not name was touched: %v", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the live file: %v", err)
			}
		})
	}
}
