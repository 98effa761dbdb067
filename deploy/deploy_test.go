// Package deploy_test holds the deployment files to the binary: every
// Kubernetes manifest parses strictly into its API type, and the probes,
// ports and flags in the manifests, the systemd unit and the Dockerfile
// agree with what flowdrop-gateway actually accepts and serves.
package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// gatewayFlags builds the gateway and returns the flag names its -h lists.
func gatewayFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flowdrop-gateway")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/flowdrop-gateway").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput() // -h exits 0 or 2 depending on flag's mood
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--?([a-z0-9][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["listen"] || !flags["admin-listen"] {
		t.Fatalf("could not read the flags from -h:\n%s", out)
	}
	return flags
}

// flagsIn returns the --name of every flag in args ("--a=b" or "--a b").
func flagsIn(args []string) map[string]string {
	out := map[string]string{}
	for i, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			val = args[i+1]
		}
		out[name] = val
	}
	return out
}

func strictDecode(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestKubernetesManifests(t *testing.T) {
	flags := gatewayFlags(t)
	var (
		dep      appsv1.Deployment
		svc      corev1.Service
		adminSvc corev1.Service
		cm       corev1.ConfigMap
		pdb      policyv1.PodDisruptionBudget
	)
	strictDecode(t, "kubernetes/deployment.yaml", &dep)
	strictDecode(t, "kubernetes/service.yaml", &svc)
	strictDecode(t, "kubernetes/admin-service.yaml", &adminSvc)
	strictDecode(t, "kubernetes/configmap.yaml", &cm)
	strictDecode(t, "kubernetes/pdb.yaml", &pdb)
	for _, k := range []struct{ got, want string }{{dep.Kind, "Deployment"}, {svc.Kind, "Service"}, {cm.Kind, "ConfigMap"}, {pdb.Kind, "PodDisruptionBudget"}} {
		if k.got != k.want {
			t.Errorf("kind %q, want %q", k.got, k.want)
		}
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2 (on etcd)", dep.Spec.Replicas)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	args := flagsIn(c.Args)
	for name := range args {
		if !flags[name] {
			t.Errorf("deployment passes --%s, which flowdrop-gateway does not have", name)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, port := range map[string]string{"listen": "grpc", "mcp-listen": "mcp", "admin-listen": "admin"} {
		if got, want := args[flag], ":"+strconv.Itoa(int(ports[port])); got != want {
			t.Errorf("--%s=%q but the %s containerPort is %d", flag, got, port, ports[port])
		}
	}
	if args["store"] != "etcd" || args["etcd-endpoints"] == "" {
		t.Errorf("replicas must share the registry: --store %q --etcd-endpoints %q", args["store"], args["etcd-endpoints"])
	}
	probe := func(what string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "admin" {
			t.Errorf("%s probe %+v; want GET %s on the admin port", what, p, path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v: want a read-only root, no privilege escalation, all capabilities dropped", c.SecurityContext)
	}
	if g := dep.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g <= 10 {
		t.Errorf("terminationGracePeriodSeconds %v: must exceed --shutdown-grace (10s) so calls drain", g)
	}
	servicePorts := func(s corev1.Service) []string {
		var names []string
		for _, p := range s.Spec.Ports {
			if _, ok := ports[p.TargetPort.String()]; !ok {
				t.Errorf("service %s port %s targets %q, which the container does not name", s.Name, p.Name, p.TargetPort.String())
			}
			names = append(names, p.TargetPort.String())
		}
		return names
	}
	// Agents reach gRPC and MCP; the admin port (metrics, status page) has
	// its own Service, so the agents' one never routes to it.
	if got := servicePorts(svc); !slices.Equal(got, []string{"grpc", "mcp"}) {
		t.Errorf("the agents' Service targets %v, want [grpc mcp] (no admin port)", got)
	}
	if got := servicePorts(adminSvc); !slices.Equal(got, []string{"admin"}) || adminSvc.Name == svc.Name {
		t.Errorf("the admin Service %q targets %v, want only [admin], under a name of its own", adminSvc.Name, got)
	}
	if adminSvc.Spec.Selector["app.kubernetes.io/name"] != dep.Spec.Template.Labels["app.kubernetes.io/name"] {
		t.Error("the admin Service's selector must match the pods")
	}
	// Replicas spread over nodes, selecting the pods themselves.
	spread := map[string]bool{}
	for _, c := range dep.Spec.Template.Spec.TopologySpreadConstraints {
		if c.LabelSelector != nil && c.LabelSelector.MatchLabels["app.kubernetes.io/name"] == dep.Spec.Template.Labels["app.kubernetes.io/name"] {
			spread[c.TopologyKey] = true
		}
	}
	if !spread["kubernetes.io/hostname"] || !spread["topology.kubernetes.io/zone"] {
		t.Errorf("topology spread over %v, want hostname and zone selecting the pods", spread)
	}
	if strings.Contains(c.Image, ":latest") || strings.Contains(c.Image, "/") {
		t.Errorf("image %q: want the bare name the kustomization's images override sets", c.Image)
	}
	if svc.Spec.Selector["app.kubernetes.io/name"] != dep.Spec.Template.Labels["app.kubernetes.io/name"] ||
		pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != dep.Spec.Template.Labels["app.kubernetes.io/name"] {
		t.Error("the service's and the disruption budget's selectors must match the pods")
	}
	// The policy the ConfigMap mounts is a valid policy file whose admin
	// listener is the one the probes use.
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.MountPath == filepath.Dir(args["policy"]))
	}
	if !mounted {
		t.Errorf("--policy %s is not under a mounted volume", args["policy"])
	}
	p, err := server.ParsePolicy([]byte(cm.Data[filepath.Base(args["policy"])]), "configmap")
	if err != nil {
		t.Fatalf("the ConfigMap's policy: %v", err)
	}
	if p.Admin.ListenAddr != args["admin-listen"] {
		t.Errorf("policy admin.listen_addr %q differs from --admin-listen %q", p.Admin.ListenAddr, args["admin-listen"])
	}
}

// TestSystemdUnitAndDockerfileFlags: the flags the unit's ExecStart and
// the image's CMD pass exist; the unit reloads with SIGHUP and is hardened.
func TestSystemdUnitAndDockerfileFlags(t *testing.T) {
	flags := gatewayFlags(t)
	unit, err := os.ReadFile("systemd/flowdrop-gateway.service")
	if err != nil {
		t.Fatal(err)
	}
	exec := regexp.MustCompile(`(?s)ExecStart=(.*?[^\\])\n`).FindSubmatch(unit)
	if exec == nil {
		t.Fatal("no ExecStart")
	}
	for name := range flagsIn(strings.Fields(strings.ReplaceAll(string(exec[1]), "\\\n", " "))) {
		if !flags[name] {
			t.Errorf("unit passes --%s, which flowdrop-gateway does not have", name)
		}
	}
	for _, want := range []string{"ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "CapabilityBoundingSet=\n"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q", strings.TrimSpace(want))
		}
	}
	docker, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile(`(?m)^CMD \[(.*)\]$`).FindSubmatch(docker)
	if cmd == nil {
		t.Fatal("no CMD")
	}
	var args []string
	for _, f := range strings.Split(string(cmd[1]), ",") {
		args = append(args, strings.Trim(strings.TrimSpace(f), `"`))
	}
	for name := range flagsIn(args) {
		if !flags[name] {
			t.Errorf("Dockerfile CMD passes --%s, which flowdrop-gateway does not have", name)
		}
	}
	for _, want := range []string{"USER nonroot", "HEALTHCHECK", "flowdropctl\", \"health\"", "CGO_ENABLED=0"} {
		if !strings.Contains(string(docker), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// TestExamplesLoadAndAreInTheOperationsGuide: the example tools file and minimal
// production policy load (admission included), and the operations guide shows each
// verbatim, so the copy a newcomer pastes is the one that is tested.
func TestExamplesLoadAndAreInTheOperationsGuide(t *testing.T) {
	tools, err := registry.LoadFile("examples/tools.yaml")
	if err != nil || len(tools) != 2 {
		t.Fatalf("examples/tools.yaml: %v (%d tools)", err, len(tools))
	}
	for _, tl := range tools {
		if _, err := (registry.Admission{LintProfiles: registry.DefaultLintProfiles()}).Admit(t.Context(), tl, nil); err != nil {
			t.Errorf("tool %s is not admitted: %v", tl.Name, err)
		}
	}
	p, err := server.LoadPolicyFile("examples/policy.yaml")
	if err != nil {
		t.Fatalf("examples/policy.yaml: %v", err)
	}
	creds, err := policy.NewCredentialSources(p.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools { // the example's tools name only credentials the example declares
		if m := tl.Spec; m != nil && m.MCPTool != nil {
			if ce := creds.Allow(m.MCPTool.CredentialEnv, m.MCPTool.CredentialFile, m.MCPTool.URL); ce != nil {
				t.Errorf("tool %s: %v", tl.Name, ce)
			}
		}
	}
	if p.Audit.OnFailure != server.AuditFailClosed && p.Audit.OnFailure != "" {
		t.Errorf("the production example must keep audit fail-closed, got %q", p.Audit.OnFailure)
	}
	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"examples/tools.yaml", "examples/policy.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), string(b)) {
			t.Errorf("docs/operations.md does not show deploy/%s verbatim", f)
		}
	}
}

// TestKustomization: the kustomization names every manifest in
// deploy/kubernetes (a new one left out would never be applied) and
// overrides the Deployment's image, the one setting every user must make.
func TestKustomization(t *testing.T) {
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Images     []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	strictDecode(t, "kubernetes/kustomization.yaml", &k)
	if k.Kind != "Kustomization" {
		t.Errorf("kind %q, want Kustomization", k.Kind)
	}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(k.Resources)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want every manifest %v", got, want)
	}
	var dep appsv1.Deployment
	strictDecode(t, "kubernetes/deployment.yaml", &dep)
	image := dep.Spec.Template.Spec.Containers[0].Image
	if len(k.Images) != 1 || k.Images[0].Name != image || k.Images[0].NewName == "" || k.Images[0].NewTag == "" {
		t.Errorf("kustomization images %+v, want one override of the Deployment's image %q", k.Images, image)
	}
}
