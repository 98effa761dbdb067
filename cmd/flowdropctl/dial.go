package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// The environment variables holding a credential. Secrets are never taken
// from the command line: arguments show in `ps` and in shell history.
const (
	envAPIKey = "FLOWDROP_API_KEY" // sent as x-api-key
	envToken  = "FLOWDROP_TOKEN"   // sent as authorization: Bearer …
)

// maxSecretFile bounds what --api-key-file and --token-file read, so a wrong
// path (a log, a device) fails fast instead of being sent as a header.
const maxSecretFile = 64 << 10

// connHelp is the usage text for the flags addConnFlags defines.
const connHelp = `Connection flags (every command that calls the gateway):
  --addr HOST:PORT        gateway address (default ` + defaultGatewayAddr + `)
  --api-key-file FILE     send the API key in FILE as x-api-key (or set $` + envAPIKey + `)
  --token-file FILE       send the token in FILE as "authorization: Bearer" (or set $` + envToken + `)
  --tls                   use TLS with the system's root CAs
  --ca-file FILE          use TLS, trusting only the CA certificates in FILE (PEM)
  --cert-file/--key-file  use TLS and present this client certificate (mTLS)
  --server-name NAME      use TLS and verify the gateway's certificate for NAME
An API key and a token cannot both be given; a file flag wins over the
variable of the same kind. Credentials are never accepted as arguments.
`

// connFlags are how a command reaches the gateway and who it says it is.
type connFlags struct {
	addr                                  string
	apiKeyFile, tokenFile                 string
	tls                                   bool
	caFile, certFile, keyFile, serverName string
}

// addConnFlags defines the connection flags on fs.
func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.addr, "addr", defaultGatewayAddr, "gateway address")
	fs.StringVar(&c.apiKeyFile, "api-key-file", "", "file holding the API key to send as x-api-key (default: $"+envAPIKey+")")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the bearer token (a JWT or an API key) to send (default: $"+envToken+")")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, verifying the gateway against the system's root CAs")
	fs.StringVar(&c.caFile, "ca-file", "", "connect with TLS, verifying the gateway against the CA certificates in this PEM file")
	fs.StringVar(&c.certFile, "cert-file", "", "client certificate (PEM) for mTLS; needs --key-file")
	fs.StringVar(&c.keyFile, "key-file", "", "client private key (PEM) for mTLS; needs --cert-file")
	fs.StringVar(&c.serverName, "server-name", "", "connect with TLS, verifying the gateway's certificate for this name")
	return c
}

// dial checks the connection flags and the credential variables and builds
// the client connection (grpc.NewClient connects lazily, on the first
// call; unary calls honour the gateway's RetryInfo, retry.go). Its errors are bad usage or input (exit 2) and never contain a
// credential. A credential about to travel in plaintext to a host other
// than this one gets a warning on stderr.
func (c *connFlags) dial(stderr io.Writer) (*grpc.ClientConn, error) {
	secret, err := c.credentials()
	if err != nil {
		return nil, err
	}
	transport := insecure.NewCredentials()
	useTLS := c.tls || c.caFile != "" || c.certFile != "" || c.keyFile != "" || c.serverName != ""
	if useTLS {
		cfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		transport = credentials.NewTLS(cfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(transport), grpc.WithChainUnaryInterceptor(retryOnRetryInfo(stderr))}
	if secret != nil {
		if !useTLS && !loopback(c.addr) {
			fmt.Fprintf(stderr, "warning: sending the %s to %s without TLS (give --tls or --ca-file if the gateway serves TLS)\n", secret.kind, c.addr)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(secret))
	}
	conn, err := grpc.NewClient(c.addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("gateway address %q: %v", c.addr, err)
	}
	return conn, nil
}

// credentials resolves the one credential to send, or nil for none.
func (c *connFlags) credentials() (*callCredentials, error) {
	key, keyFrom, err := secretFrom(c.apiKeyFile, "--api-key-file", envAPIKey, "API key")
	if err != nil {
		return nil, err
	}
	tok, tokFrom, err := secretFrom(c.tokenFile, "--token-file", envToken, "token")
	if err != nil {
		return nil, err
	}
	switch {
	case key != "" && tok != "":
		return nil, fmt.Errorf("both an API key (%s) and a bearer token (%s) are set; give only one", keyFrom, tokFrom)
	case key != "":
		return &callCredentials{kind: "API key", md: map[string]string{"x-api-key": key}}, nil
	case tok != "":
		return &callCredentials{kind: "bearer token", md: map[string]string{"authorization": "Bearer " + tok}}, nil
	}
	return nil, nil
}

// secretFrom reads a credential from file (when given) or else the
// environment variable env, trimmed of surrounding whitespace. It returns
// the secret and where it came from (for messages, which name the source,
// never the value).
func secretFrom(file, flagName, env, what string) (secret, from string, err error) {
	if file == "" {
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			return "", "", nil
		}
		from = "$" + env
		if err := headerSafe(v); err != nil {
			return "", "", fmt.Errorf("%s: the %s %v", from, what, err)
		}
		return v, from, nil
	}
	from = flagName + " " + file
	f, err := os.Open(file)
	if err != nil {
		return "", "", fmt.Errorf("%s: %v", flagName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", "", fmt.Errorf("%s: %v", from, err)
	}
	if len(b) > maxSecretFile {
		return "", "", fmt.Errorf("%s: file is larger than %d KiB; is it really a %s?", from, maxSecretFile>>10, what)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", "", fmt.Errorf("%s: file holds no %s", from, what)
	}
	if err := headerSafe(v); err != nil {
		return "", "", fmt.Errorf("%s: the %s %v", from, what, err)
	}
	return v, from, nil
}

// headerSafe checks that v can travel as a gRPC (HTTP/2) header value:
// printable ASCII only. Checked here so the refusal names the source
// rather than failing each call with a transport error.
func headerSafe(v string) error {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			if v[i] == '\n' || v[i] == '\r' {
				return errors.New("spans several lines; put only the credential in it")
			}
			return fmt.Errorf("has a non-printable or non-ASCII byte at offset %d", i)
		}
	}
	return nil
}

// tlsConfig builds the client TLS configuration from the flags.
func (c *connFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.serverName}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate found", c.caFile)
		}
		cfg.RootCAs = pool
	}
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, errors.New("--cert-file and --key-file go together: give both for mTLS, or neither")
	}
	if c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert-file %s / --key-file %s: %v", c.certFile, c.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// loopback reports whether addr is on this host, where plaintext is the
// gateway's default and nothing crosses a network.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// callCredentials attaches one credential to every call and stream.
type callCredentials struct {
	kind string // "API key" or "bearer token", for messages
	md   map[string]string
}

func (c *callCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return c.md, nil
}

// RequireTransportSecurity is false: the gateway serves plaintext on
// loopback by default, and refusing there would make auth unusable in the
// common local setup. dial warns when plaintext leaves the host.
func (c *callCredentials) RequireTransportSecurity() bool { return false }
