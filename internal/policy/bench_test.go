package policy

import (
	"testing"
)

func BenchmarkPolicyAuthenticateAPIKey(b *testing.B) {
	keys := make([]APIKey, 50)
	for i := range keys {
		keys[i] = APIKey{Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), SHA256: HashAPIKey("key-" + string(rune(i))), Roles: []string{RoleInvoker}}
	}
	keys[49].SHA256 = HashAPIKey(secretKey)
	a, err := NewAuthenticator(b.Context(), AuthConfig{Mode: AuthOn, APIKeys: keys})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := a.Authenticate(b.Context(), Credentials{APIKey: secretKey}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPolicyRulesEvaluate(b *testing.B) {
	rs, err := NewRules([]Rule{{Name: "no-chain", Tools: []string{"shell.*"}, Expr: `!args.command.contains("&&")`}})
	if err != nil {
		b.Fatal(err)
	}
	args := mustStruct(b, `{"command":"ls -l /tmp","env":{"A":"1"}}`)
	c := Caller{Subject: "agent", Method: MethodJWT, Roles: []string{RoleInvoker}}
	for b.Loop() {
		if err := rs.Evaluate(b.Context(), c, "shell.run", args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPolicyRedact(b *testing.B) {
	red := NewRedactor(mustStruct(b, sensitiveSchema))
	args := mustStruct(b, `{"user":"alice","password":"x","db":{"host":"h","pass":"p"},"accounts":[{"name":"a","pin":"1"},{"name":"b","pin":"2"}]}`)
	for b.Loop() {
		red.Redact(args)
	}
}

func BenchmarkPolicyLimitsCheck(b *testing.B) {
	l := Limits{MaxArgumentBytes: 1 << 20, MaxStringLength: 1 << 16, MaxDepth: 32}
	args := mustStruct(b, `{"user":"alice","db":{"host":"h","pass":"p"},"accounts":[{"name":"a","pin":"1"},{"name":"b","pin":"2"}]}`)
	for b.Loop() {
		if err := l.Check("t", args); err != nil {
			b.Fatal(err)
		}
	}
}
