// Package console is the operator's web console on the admin listener
// (/console/): server-rendered pages (html/template, no script) over the
// registry, the pipeline's normalize and validate stages, the audit log,
// the policy in force and the gateway's health.
//
// Who may see it: a credential the policy in force authenticates (an API
// key or a JWT, pasted once at /console/login) holding the admin role
// (everything, and approving or rejecting upstream changes) or the
// viewer role (read-only: no change, no backend address, no store
// address, no backend error text). The try-it panel's Invoke is a call of
// the tool through the whole pipeline as the session's principal, for an
// admin session or a viewer the policy lets call the tool; it is audited
// with the client "console". A login makes a server-side session
// (an HttpOnly, SameSite=Strict cookie naming it); a session ends at
// logout, after its idle or absolute lifetime, and when the policy in
// force changes (its roles may have). Every change is a POST carrying the
// session's CSRF token and passing net/http's cross-origin protection;
// every page is sent with a Content-Security-Policy that allows no script,
// no frame and no foreign resource. No page renders a credential, nor an
// argument value but those the user pasted and the answer of their own
// Invoke; the one path on the gateway's host is the registry store's (a
// bbolt file's), on an admin's Overview, as the status page shows it.
package console
