package identity

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/flowdrop/gateway/internal/policy"
)

// The flow's browser side (the gateway's start and callback endpoints):
//
//  1. The caller is refused with a link to StartPath carrying its subject
//     and the OAuth client, sealed and expiring (StartURL).
//     With verify_caller, start first has the browser sign in at the
//     callers' provider (consent_verify.go) and goes on to step 2 only for
//     the link's subject.
//  2. Start makes a PKCE verifier (S256) and a nonce, seals both with the
//     subject, the client and an expiry as `state`, sets the nonce in a
//     cookie (so only the browser that started can finish) and redirects
//     to the authorization server.
//  3. The callback opens `state`, holds it to the clock and the cookie,
//     exchanges the code with the verifier and stores the token sealed
//     under the subject. Nothing is kept between the steps; any replica
//     holding the key serves either one.

// consentCookie holds the flow's nonce in the browser.
const consentCookie = "flowdrop_upstream_consent"

// flowState is what `state` carries, sealed.
type flowState struct {
	Subject  string `json:"s"`
	Client   string `json:"c"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"` // SHA-256 of the cookie's nonce
	Expires  int64  `json:"x"`
}

// maxSealedParam bounds a sealed query parameter before it is opened.
const maxSealedParam = 4096

// ConsentHandler serves StartPath and CallbackPath under the Consent in
// force (current; nil: the mode is not configured, 404). Its answers are
// plain text for a person, naming no token, secret or server address.
func ConsentHandler(current func() *Consent, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		k := current()
		if k == nil {
			http.Error(w, "upstream authorization is not configured on this gateway", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case StartPath:
			k.start(w, r)
		case CallbackPath:
			k.callback(w, r, log)
		case VerifyPath:
			k.verifyCallback(w, r, log)
		default:
			http.NotFound(w, r)
		}
	})
}

func (k *Consent) start(w http.ResponseWriter, r *http.Request) {
	var sp startParams
	if !k.open(purposeStart, r.URL.Query().Get("s"), &sp) || k.now().Unix() > sp.Expires {
		http.Error(w, "This authorization link is not valid or has expired. Call the tool again for a new one.", http.StatusBadRequest)
		return
	}
	cc, ok := k.clients[sp.Client]
	if !ok {
		http.Error(w, "This authorization link is for an upstream the gateway no longer configures.", http.StatusNotFound)
		return
	}
	if k.vc != nil {
		k.verifyStart(w, r, sp)
		return
	}
	k.startUpstream(w, r, sp.Subject, sp.Client, cc)
}

// startUpstream sends the browser to the upstream's authorization server
// for subject (the link's, checked first when verify_caller is set).
func (k *Consent) startUpstream(w http.ResponseWriter, r *http.Request, subject, client string, cc *consentClient) {
	conf, err := k.endpoints(r.Context(), cc)
	if err != nil {
		http.Error(w, "The upstream's authorization server cannot be reached right now; try again later.", http.StatusServiceUnavailable)
		return
	}
	nonce := randomText(32)
	fs := flowState{Subject: subject, Client: client, Verifier: oauth2.GenerateVerifier(), Nonce: nonceHash(nonce),
		Expires: k.now().Add(k.cfg.StateTTL).Unix()}
	plain, _ := json.Marshal(fs)
	state := k.keys.Seal(purposeState, plain)
	http.SetCookie(w, &http.Cookie{Name: consentCookie, Value: nonce, Path: ConsentPathPrefix, MaxAge: int(k.cfg.StateTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(k.cfg.RedirectURL, "https:"), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, conf.AuthCodeURL(state, oauth2.S256ChallengeOption(fs.Verifier)), http.StatusFound)
}

func (k *Consent) callback(w http.ResponseWriter, r *http.Request, log *slog.Logger) {
	var fs flowState
	cc, code, ok := k.openReturn(w, r, purposeState, consentCookie, &fs, &fs, authorizationReturn)
	if !ok {
		return
	}
	conf, err := k.endpoints(r.Context(), cc)
	if err != nil {
		http.Error(w, "The upstream's authorization server cannot be reached right now; try again later.", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), k.cfg.Timeout)
	defer cancel()
	t, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, k.client), code, oauth2.VerifierOption(fs.Verifier))
	if err == nil {
		err = checkIssued(t)
	}
	if err != nil {
		log.Warn("upstream authorization: code exchange failed", "client", fs.Client, "subject", policy.Bound(fs.Subject), "error", oauthErrorText(err))
		status := http.StatusBadGateway
		if refusedByServer(err) {
			status = http.StatusForbidden
		}
		http.Error(w, "The upstream's authorization server did not issue a token for this authorization. Call the tool again to retry.", status)
		return
	}
	if k.cfg.Store == nil {
		http.Error(w, "The gateway cannot store the authorization right now; try again later.", http.StatusServiceUnavailable)
		return
	}
	if _, err := k.save(ctx, fs.Subject, fs.Client, t, storedToken{}); err != nil {
		if errors.Is(err, ErrStoreFull) {
			log.Error("upstream authorization: the user token store is full", "client", fs.Client, "max_tokens", k.cfg.MaxTokens)
			http.Error(w, "The gateway holds as many authorizations as it may; ask its operator.", http.StatusInsufficientStorage)
			return
		}
		log.Error("upstream authorization: storing the token failed", "client", fs.Client, "error", policy.Bound(err.Error()))
		http.Error(w, "The gateway cannot store the authorization right now; try again later.", http.StatusServiceUnavailable)
		return
	}
	log.Info("upstream authorization stored", "client", fs.Client, "subject", policy.Bound(fs.Subject))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Authorized: the gateway will call %s with your authorization. You can close this page and call the tool again.\n", fs.Client)
}

// open opens a sealed parameter into v; false when it is not one this
// gateway sealed for purpose.
func (k *Consent) open(purpose, sealed string, v any) bool {
	if sealed == "" || len(sealed) > maxSealedParam {
		return false
	}
	plain, err := k.keys.Open(purpose, sealed)
	return err == nil && json.Unmarshal(plain, v) == nil
}

// returnWords name the flow in the refusals of a browser returning to it.
type returnWords struct{ stale, otherBrowser, notGranted, noCode string }

var authorizationReturn = returnWords{
	stale:        "This authorization is not one the gateway started, or it has expired. Call the tool again for a new link.",
	otherBrowser: "This authorization was started in another browser; open the link from the tool's answer here.",
	notGranted:   "The authorization was not granted (%s). Call the tool again to retry.",
	noCode:       "The authorization server sent no usable code.",
}

// openReturn checks a browser coming back from an authorization server
// before its code is used: the sealed state (opened into state, whose
// flow part is fs) is the gateway's and unexpired, the browser holds the
// cookie the flow's start set (cleared now, used once), no error came
// back, and the state's client and a code of bounded size are there.
// Otherwise it writes the refusal and ok is false.
func (k *Consent) openReturn(w http.ResponseWriter, r *http.Request, purpose, cookie string, state any, fs *flowState, words returnWords) (cc *consentClient, code string, ok bool) {
	q := r.URL.Query()
	if !k.open(purpose, q.Get("state"), state) || k.now().Unix() > fs.Expires {
		http.Error(w, words.stale, http.StatusBadRequest)
		return nil, "", false
	}
	c, err := r.Cookie(cookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(nonceHash(c.Value)), []byte(fs.Nonce)) != 1 {
		http.Error(w, words.otherBrowser, http.StatusBadRequest)
		return nil, "", false
	}
	http.SetCookie(w, &http.Cookie{Name: cookie, Value: "", Path: ConsentPathPrefix, MaxAge: -1, HttpOnly: true,
		Secure: strings.HasPrefix(k.cfg.RedirectURL, "https:"), SameSite: http.SameSiteLaxMode})
	if e := q.Get("error"); e != "" {
		http.Error(w, fmt.Sprintf(words.notGranted, policy.Bound(errorCode(e))), http.StatusForbidden)
		return nil, "", false
	}
	cc, known := k.clients[fs.Client]
	code = q.Get("code")
	if !known || code == "" || len(code) > maxSealedParam {
		http.Error(w, words.noCode, http.StatusBadRequest)
		return nil, "", false
	}
	return cc, code, true
}

func nonceHash(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Revoke removes the stored tokens of subject (at client, or every one
// when client is ""): the next call asks the caller to authorize again.
func (k *Consent) Revoke(ctx context.Context, subject, client string) (int, error) {
	if k == nil || k.cfg.Store == nil {
		return 0, errors.New("user_consent is not configured")
	}
	return k.cfg.Store.Delete(ctx, subject, client)
}

// List is who holds a stored token at which client: never the tokens.
func (k *Consent) List(ctx context.Context) ([]TokenEntry, error) {
	if k == nil || k.cfg.Store == nil {
		return nil, errors.New("user_consent is not configured")
	}
	return k.cfg.Store.List(ctx, maxConsentListed)
}
