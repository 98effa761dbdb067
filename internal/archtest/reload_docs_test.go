package archtest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPolicyGuideNamesWhatAReloadCannotChange: every setting a policy
// reload refuses to change (server/reload.go, unswappable) is named in
// the policy guide's "Reloading the policy" paragraph, so an operator
// reading it is not surprised by a refused reload; the deployment files'
// comments point there instead of keeping a list of their own.
func TestPolicyGuideNamesWhatAReloadCannotChange(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../server/reload.go")
	if err != nil {
		t.Fatal(err)
	}
	fields := regexp.MustCompile(`\bbad\("([a-z_.]+)`).FindAllStringSubmatch(string(src), -1)
	if len(fields) < 5 {
		t.Fatalf("found %d settings in server/reload.go's unswappable; the pattern no longer reads it", len(fields))
	}
	_, para, ok := strings.Cut(doc(t, "docs/policy.md"), "- **Reloading the policy**")
	if !ok {
		t.Fatal(`docs/policy.md has no "Reloading the policy" item`)
	}
	para, _, _ = strings.Cut(para, "\n- ")
	for _, f := range fields {
		if !strings.Contains(para, "`"+f[1]) {
			t.Errorf("docs/policy.md's \"Reloading the policy\" does not name `%s`, which a reload cannot change (server/reload.go)", f[1])
		}
	}
	for _, file := range []string{"deploy/kubernetes/configmap.yaml", "deploy/systemd/flowdrop-gateway.service"} {
		if !strings.Contains(doc(t, file), "docs/policy.md") {
			t.Errorf("%s says how a reload behaves without pointing at docs/policy.md, where what a reload cannot change is listed", file)
		}
	}
}
