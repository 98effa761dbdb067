package replay

import "github.com/flowdrop/gateway/internal/policy"

// CallerFunc is the caller a recorded identity (the line's caller_subject
// and caller_method) would be under the candidate policy, with its roles;
// ok is false when the candidate does not know it (its roles cannot be
// told), and the call is then not replayed.
type CallerFunc func(subject, method string) (c policy.Caller, ok bool)

// CallersFromAuth resolves recorded callers as the candidate's
// authentication would name them, credentials aside: an API key's caller
// by its name, a certificate's by its subject (mapped roles, else the
// defaults), and, with authentication off, every caller as the anonymous
// one. A JWT caller's roles came from its token: not the candidate's to
// say (Run takes the roles its line recorded, if it did).
func CallersFromAuth(cfg policy.AuthConfig) CallerFunc {
	return func(subject, method string) (policy.Caller, bool) {
		if cfg.Mode == policy.AuthOff {
			roles := cfg.AnonymousRoles
			if roles == nil { // as policy.NewAuthenticator defaults it
				roles = []string{policy.RoleAdmin, policy.RoleInvoker}
			}
			return policy.Caller{Subject: "anonymous", Method: policy.MethodNone, Roles: roles}, true
		}
		switch method {
		case policy.MethodAPIKey:
			for _, k := range cfg.APIKeys {
				if k.Name == subject {
					return policy.Caller{Subject: subject, Method: method, Roles: k.Roles}, true
				}
			}
		case policy.MethodMTLS:
			if m := cfg.MTLS; m != nil {
				roles, ok := m.Roles[subject]
				if !ok {
					roles = m.DefaultRoles
				}
				return policy.Caller{Subject: subject, Method: method, Roles: roles}, true
			}
		}
		return policy.Caller{}, false
	}
}
