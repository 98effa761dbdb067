package mcpupstream

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestHTTPClientKeepsTheCredentialAtItsOrigin: a session's client follows
// no redirect, to another origin or within its own, and its transport —
// the layer that adds the credential — sends nothing to another origin
// even when asked directly (as a followed redirect would ask it).
func TestHTTPClientKeepsTheCredentialAtItsOrigin(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // server → the credential of each request it received
	var other *httptest.Server    // the other origin, set before any request
	record := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = append(seen[name], r.Header.Get("Authorization"))
			mu.Unlock()
			switch r.URL.Path {
			case "/off":
				http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
			case "/same":
				http.Redirect(w, r, "/elsewhere", http.StatusMovedPermanently)
			default:
				w.Write([]byte("ok"))
			}
		}
	}
	other = httptest.NewServer(record("other"))
	defer other.Close()
	home := httptest.NewServer(record("home"))
	defer home.Close()
	const cred = "Bearer tok-origin-5d1e"
	client := HTTPClient(home.URL+"/mcp", Header{Name: "Authorization", Value: cred}, nil)

	cases := []struct {
		name, reason, url string
		direct            bool // through the transport, as a followed redirect would be sent
		wantErr           error
		wantHome          []string
	}{
		{name: "endpoint", reason: "the endpoint's origin gets the credential",
			url: home.URL + "/mcp", wantHome: []string{cred}},
		{name: "endpoint-spelled-otherwise", reason: "the origin is compared as scheme, host and port, case-insensitively",
			url: strings.Replace(home.URL, "http://", "HTTP://", 1) + "/mcp", direct: true, wantHome: []string{cred}},
		{name: "off-origin-redirect", reason: "a redirect to another port is not followed",
			url: home.URL + "/off", wantErr: ErrRedirect, wantHome: []string{cred}},
		{name: "same-origin-redirect", reason: "nor one within the origin: /elsewhere is never asked for",
			url: home.URL + "/same", wantErr: ErrRedirect, wantHome: []string{cred}},
		{name: "other-origin-direct", reason: "the transport itself sends nothing to another origin",
			url: other.URL + "/x", direct: true, wantErr: ErrOtherOrigin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			mu.Unlock()
			req, err := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(`{"arguments":"secret"}`))
			if err != nil {
				t.Fatal(err)
			}
			var resp *http.Response
			if tc.direct {
				resp, err = client.Transport.RoundTrip(req)
			} else {
				resp, err = client.Do(req)
			}
			if resp != nil {
				resp.Body.Close()
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v (%s)", err, tc.wantErr, tc.reason)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen["other"]) != 0 {
				t.Errorf("the other origin received %q (%s)", seen["other"], tc.reason)
			}
			if strings.Join(seen["home"], ",") != strings.Join(tc.wantHome, ",") {
				t.Errorf("the endpoint's origin received %q, want %q (%s)", seen["home"], tc.wantHome, tc.reason)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	cases := []struct{ reason, a, b string }{
		{"the default port is explicit", "http://example.com/mcp", "http://example.com:80/x"},
		{"scheme and host are case-insensitive", "HTTPS://Example.COM/mcp", "https://example.com:443"},
		{"IPv6 literals keep their brackets", "http://[::1]:8080/", "http://[::1]:8080/mcp"},
	}
	for _, tc := range cases {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if origin(a) != origin(b) || origin(a) == "" {
			t.Errorf("origin(%s) %q, origin(%s) %q: want equal (%s)", tc.a, origin(a), tc.b, origin(b), tc.reason)
		}
	}
	differ := []struct{ reason, a, b string }{
		{"another port", "http://127.0.0.1:8080/", "http://127.0.0.1:8081/"},
		{"another scheme, even on the same port", "http://example.com:443/", "https://example.com/"},
		{"another host", "http://a.example/", "http://b.example/"},
	}
	for _, tc := range differ {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if origin(a) == origin(b) {
			t.Errorf("origin(%s) = origin(%s) = %q: want different (%s)", tc.a, tc.b, origin(a), tc.reason)
		}
	}
}
