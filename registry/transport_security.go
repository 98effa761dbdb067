package registry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TransportSecurity is TLS to a backend (mTLS when a client certificate is
// set), shared by every backend kind. The files are paths on the gateway's
// host, read when a connection is made (ClientConfig), so a renewed
// certificate is picked up by the next connection.
//
// Any field set means TLS: a tool or target with TransportSecurity is never
// called in plaintext, and a file that does not load fails its calls
// rather than falling back.
type TransportSecurity struct {
	// CAFile holds the PEM CA certificates the backend's certificate must
	// chain to; empty: the host's roots.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate and key presented
	// to the backend (mTLS); both or neither.
	CertFile, KeyFile string
	// ServerName is the name the backend's certificate must carry; empty:
	// the host of the dial target.
	ServerName string
	// Require asks for TLS even with nothing else set (the host's roots).
	Require bool
}

// Enabled reports whether s asks for TLS.
func (s TransportSecurity) Enabled() bool { return s != TransportSecurity{} }

// TLSFileError is a TLS file that would not load: which setting, which
// file (for the gateway's log, never for callers), and why.
type TLSFileError struct {
	Field, File string
	Err         error
}

func (e *TLSFileError) Error() string { return fmt.Sprintf("tls %s %s: %v", e.Field, e.File, e.Err) }
func (e *TLSFileError) Unwrap() error { return e.Err }

// ClientConfig reads s's files into a client *tls.Config (TLS 1.2 at
// least). Errors are *TLSFileError.
func (s TransportSecurity) ClientConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, &TLSFileError{Field: "ca_file", File: s.CAFile, Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &TLSFileError{Field: "ca_file", File: s.CAFile, Err: errors.New("holds no PEM certificate")}
		}
		cfg.RootCAs = pool
	}
	if s.CertFile != "" || s.KeyFile != "" {
		if s.CertFile == "" || s.KeyFile == "" {
			return nil, &TLSFileError{Field: "cert_file", File: s.CertFile, Err: errors.New("cert_file and key_file go together")}
		}
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, &TLSFileError{Field: "cert_file", File: s.CertFile, Err: err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// check is compilation's look at s, the same on every replica: something
// set, both halves of a client certificate. It returns the field at fault
// (".cert_file") and a reason.
func (s *TransportSecurity) check() (string, string) {
	if !s.Enabled() {
		return "", "sets nothing: set require, ca_file, cert_file and key_file, or server_name (or leave tls out)"
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return ".cert_file", "cert_file and key_file go together (mTLS): set both or neither"
	}
	return "", ""
}

// checkTLSFiles is admission's look at t's TLS files: present and parsing
// on the gateway that admits it. Not part of compilation: a stored tool
// whose file is missing on some replica stays registered there and its
// calls fail Unavailable naming it (the file in the log), rather than the
// tool vanishing. The reason names no path (the caller sent it; the
// gateway's view of its disk is not the caller's business).
func checkTLSFiles(t Tool) *ToolError {
	if t.Spec == nil || t.Spec.TLS == nil {
		return nil
	}
	if _, err := t.Spec.TLS.ClientConfig(); err != nil {
		field := "spec.tls"
		var fe *TLSFileError
		if errors.As(err, &fe) {
			field += "." + fe.Field
		}
		return &ToolError{Tool: t.Name, Field: field, Reason: "does not load on the gateway: missing, unreadable, or not PEM of the right kind"}
	}
	return nil
}

func sameTLS(a, b *TransportSecurity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
