package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// importFlags are what every importer sets on each tool it imports,
// besides what the source says: transport security to the backend
// (spec.tls) and annotations (MCP's hints).
type importFlags struct {
	caFile, certFile, keyFile, serverName *string
	requireTLS                            *bool
	annotations                           annotationFlags
}

func addImportFlags(fs *flag.FlagSet) *importFlags {
	i := &importFlags{annotations: annotationFlags{}}
	i.caFile = fs.String("tls-ca-file", "", "each tool's backend is reached over TLS verified with this CA file (spec.tls.ca_file)")
	i.certFile = fs.String("tls-cert-file", "", "client certificate each tool presents to its backend (spec.tls.cert_file; with --tls-key-file)")
	i.keyFile = fs.String("tls-key-file", "", "the client certificate's key (spec.tls.key_file)")
	i.serverName = fs.String("tls-server-name", "", "the name the backend's certificate must carry (spec.tls.server_name)")
	i.requireTLS = fs.Bool("tls-require", false, "each tool's backend must be reached over TLS (spec.tls.require)")
	fs.Var(i.annotations, "annotation", "set an annotation on every tool, NAME=true|false (read_only_hint, destructive_hint, idempotent_hint, open_world_hint; repeatable; overrides the source's)")
	return i
}

// edit sets the flags' TLS and annotations on every tool.
func (i *importFlags) edit(tools []*gatewayv1.Tool) {
	tls := &gatewayv1.TransportSecurity{CaFile: *i.caFile, CertFile: *i.certFile, KeyFile: *i.keyFile, ServerName: *i.serverName, Require: *i.requireTLS}
	setTLS := tls.CaFile != "" || tls.CertFile != "" || tls.KeyFile != "" || tls.ServerName != "" || tls.Require
	for _, t := range tools {
		if setTLS {
			if t.Spec == nil {
				t.Spec = &gatewayv1.BackendSpec{}
			}
			t.Spec.Tls = tls
		}
		if len(i.annotations) == 0 {
			continue
		}
		if t.Annotations == nil {
			t.Annotations = &gatewayv1.ToolAnnotations{}
		}
		for name, v := range i.annotations {
			*annotationField(t.Annotations, name) = &v
		}
	}
}

// annotationField is the hint named name (a name annotationFlags took).
func annotationField(a *gatewayv1.ToolAnnotations, name string) **bool {
	switch name {
	case "read_only_hint":
		return &a.ReadOnlyHint
	case "destructive_hint":
		return &a.DestructiveHint
	case "idempotent_hint":
		return &a.IdempotentHint
	case "open_world_hint":
		return &a.OpenWorldHint
	}
	panic("flowdropctl: annotation " + name + " was not checked")
}

var annotationNames = []string{"read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"}

// annotationFlags collects repeated --annotation NAME=BOOL.
type annotationFlags map[string]bool

func (a annotationFlags) String() string {
	parts := make([]string, 0, len(a))
	for _, k := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, k+"="+strconv.FormatBool(a[k]))
	}
	return strings.Join(parts, ",")
}

func (a annotationFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || !slices.Contains(annotationNames, k) {
		return fmt.Errorf("want NAME=true|false, NAME one of %s; got %q", strings.Join(annotationNames, ", "), s)
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%s: want true or false, got %q", k, v)
	}
	a[k] = b
	return nil
}
