package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// publishedDocs are the Markdown files a reader follows links between: the
// front page, the standing documents and every guide under docs/.
func publishedDocs(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides under docs/: %v", err)
	}
	files := []string{"README.md", "CONFORMANCE.md", "RELIABILITY.md", "BENCHMARKS.md"}
	for _, g := range guides {
		files = append(files, "docs/"+filepath.Base(g))
	}
	return files
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fence     = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors returns the heading anchors GitHub renders for a Markdown text:
// lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func anchors(text string) map[string]bool {
	text = fence.ReplaceAllString(text, "")
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinksResolve: every relative link in the published documents
// names a file or directory of the repository, and every anchor a heading of
// the file it points into, so a guide split or a renamed heading cannot
// leave a reader at a dead link. CONFORMANCE.md links only inside the
// repository: each line of it is proven by something the reader can open.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	texts := map[string]string{}
	for _, f := range publishedDocs(t) {
		texts[f] = doc(t, f)
	}
	anchorsOf := map[string]map[string]bool{}
	for f, s := range texts {
		anchorsOf[f] = anchors(s)
	}
	for f, s := range texts {
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(s, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				if f == "CONFORMANCE.md" {
					t.Errorf("CONFORMANCE.md links outside the repository: %s", target)
				}
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
				if _, err := os.Stat("../../" + dest); err != nil {
					t.Errorf("%s links to %s, which does not exist", f, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			as, ok := anchorsOf[dest]
			if !ok {
				t.Errorf("%s links to an anchor in %s, which is not a published document", f, target)
				continue
			}
			if !as[frag] {
				t.Errorf("%s links to %s: no heading %q there", f, target, frag)
			}
		}
	}
}

// TestNoStaleREADMESectionReferences: the documents name a README section
// only if the front page has it; the guides hold the rest.
func TestNoStaleREADMESectionReferences(t *testing.T) {
	t.Parallel()
	ref := regexp.MustCompile(`README,?\s+"([^"]+)"`)
	front := doc(t, "README.md")
	for _, f := range publishedDocs(t) {
		for _, m := range ref.FindAllStringSubmatch(doc(t, f), -1) {
			if !strings.Contains(front, "## "+m[1]) {
				t.Errorf("%s refers to the README's section %q, which is in a guide now", f, m[1])
			}
		}
	}
}
