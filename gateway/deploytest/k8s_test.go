package deploytest

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// k8sDir is the manifests' directory, relative to root; kustomizations are
// the ones rendered.
const k8sDir = "deploy/k8s"

var kustomizations = []string{"base", "overlays/example"}

// rendered is a kustomization's output, decoded strictly into the API
// types (an unknown or misspelled field fails the decoding).
type rendered struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	jobs        map[string]*batchv1.Job
	namespaces  []string
}

// k8sFiles reads deploy/k8s into memory: path (relative to deploy/k8s) to
// content.
func k8sFiles(t testing.TB) map[string]string {
	t.Helper()
	files := map[string]string{}
	dir := filepath.Join(root, k8sDir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// render runs kustomize (krusty, what `kubectl kustomize` runs) over an
// in-memory copy of the files and decodes the result.
func render(files map[string]string, kustomization string) (*rendered, error) {
	mem := filesys.MakeFsInMemory()
	for p, content := range files {
		full := path.Join("/k8s", p)
		if err := mem.MkdirAll(path.Dir(full)); err != nil {
			return nil, err
		}
		if err := mem.WriteFile(full, []byte(content)); err != nil {
			return nil, err
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, path.Join("/k8s", kustomization))
	if err != nil {
		return nil, err
	}
	r := &rendered{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		jobs: map[string]*batchv1.Job{},
	}
	for _, res := range m.Resources() {
		b, err := res.AsYAML()
		if err != nil {
			return nil, err
		}
		name := res.GetName()
		var decodeErr error
		switch kind := res.GetKind(); kind {
		case "Deployment":
			o := &appsv1.Deployment{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.deployments[name] = o
		case "Service":
			o := &corev1.Service{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.services[name] = o
		case "ConfigMap":
			o := &corev1.ConfigMap{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.configMaps[name] = o
		case "Secret":
			o := &corev1.Secret{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.secrets[name] = o
		case "PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.pdbs[name] = o
		case "HorizontalPodAutoscaler":
			o := &autoscalingv2.HorizontalPodAutoscaler{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.hpas[name] = o
		case "Job":
			o := &batchv1.Job{}
			decodeErr = yaml.UnmarshalStrict(b, o)
			r.jobs[name] = o
		case "Namespace":
			r.namespaces = append(r.namespaces, name)
		default:
			return nil, fmt.Errorf("%s %s: a kind these checks do not know; teach deploytest about it", kind, name)
		}
		if decodeErr != nil {
			return nil, fmt.Errorf("%s %s: %v", res.GetKind(), name, decodeErr)
		}
	}
	return r, nil
}

// imageCommand is the docrepo command an image runs: the last path element
// of its name (registry.example.com/docrepo/search:1.0 runs search).
func imageCommand(image string) string {
	name := image
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return path.Base(name)
}

// selects reports whether a matchLabels selector selects labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// containerPort resolves a probe's or Service's target port (a name or a
// number) to a container port number.
func containerPort(c corev1.Container, target string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == target || strconv.Itoa(int(p.ContainerPort)) == target {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// documentedSecrets are the name/key pairs deploy/k8s/README.md tells the
// operator to create (written there as `secret/NAME KEY`).
func documentedSecrets(files map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("`secret/([a-z0-9-]+) ([A-Z0-9_]+)`").FindAllStringSubmatch(files["README.md"], -1) {
		out[m[1]+"/"+m[2]] = true
	}
	return out
}

// secretish names hold credentials: their values must come from Secrets.
var secretish = regexp.MustCompile(`PASSWORD|SECRET|TOKEN|API_KEY|ACCESS_KEY|DATABASE_URL`)

// checkEnv checks one container's environment; it returns the literal or
// ConfigMap values by name.
func checkEnv(t testing.TB, r *rendered, files map[string]string, where string, c corev1.Container, cmd *command, add func(string, string, ...any)) map[string]string {
	values := map[string]string{}
	if len(c.EnvFrom) > 0 {
		add(where, "uses envFrom: list each variable, so that every one is checked against what %s registers", cmd.name)
	}
	documented := documentedSecrets(files)
	for _, e := range c.Env {
		if !cmd.accepts(t, e.Name) {
			add(where, "unknown variable %s: %s does not register it", e.Name, cmd.name)
		}
		switch {
		case e.ValueFrom == nil:
			values[e.Name] = e.Value
			if secretish.MatchString(e.Name) && e.Value != "" {
				add(where, "%s is a literal value; credentials must come from a Secret", e.Name)
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := r.configMaps[ref.Name]
			if !ok {
				add(where, "%s: no ConfigMap %s", e.Name, ref.Name)
			} else if v, ok := cm.Data[ref.Key]; !ok {
				add(where, "%s: ConfigMap %s has no key %s", e.Name, ref.Name, ref.Key)
			} else {
				values[e.Name] = v
			}
			if secretish.MatchString(e.Name) {
				add(where, "%s comes from a ConfigMap; credentials must come from a Secret", e.Name)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			values[e.Name] = "secret:" + ref.Name
			if _, ok := r.secrets[ref.Name]; !ok && !documented[ref.Name+"/"+ref.Key] {
				add(where, "%s: Secret %s (key %s) is neither rendered nor documented in %s/README.md as `secret/%s %s`", e.Name, ref.Name, ref.Key, k8sDir, ref.Name, ref.Key)
			}
		default:
			add(where, "%s: unsupported valueFrom", e.Name)
		}
	}
	return values
}

// checkK8s returns every problem of a rendered kustomization.
func checkK8s(t testing.TB, r *rendered, files map[string]string) []string {
	t.Helper()
	cmds := commands(t)
	var problems []string
	add := func(where, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", where, fmt.Sprintf(format, args...)))
	}

	// Which Deployment runs each command; the Service that selects it.
	byCommand := map[string]*appsv1.Deployment{}
	for name, d := range r.deployments {
		if len(d.Spec.Template.Spec.Containers) != 1 {
			add("Deployment "+name, "want exactly one container, have %d", len(d.Spec.Template.Spec.Containers))
			continue
		}
		cmd := imageCommand(d.Spec.Template.Spec.Containers[0].Image)
		if byCommand[cmd] != nil {
			add("Deployment "+name, "a second Deployment of %s", cmd)
		}
		byCommand[cmd] = d
	}
	for _, svc := range services {
		if byCommand[svc] == nil {
			add("Deployment "+svc, "no Deployment runs the %s command", svc)
		}
	}
	// The write path yields the CPU to search and indexing on a busy node
	// (docs/design.md §7): CPU requests, which set the CPU shares, below
	// theirs.
	cpuRequest := func(cmd string) (int64, bool) {
		d := byCommand[cmd]
		if d == nil {
			return 0, false
		}
		q, ok := d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		return q.MilliValue(), ok
	}
	for _, w := range []string{"gateway", "document", "folder", "schema"} {
		for _, r := range []string{"search", "indexer"} {
			wm, ok1 := cpuRequest(w)
			rm, ok2 := cpuRequest(r)
			if ok1 && ok2 && wm >= rm {
				add("Deployment "+w, "CPU request %dm is not below %s's %dm: a bulk upload would starve indexing and searches", wm, r, rm)
			}
		}
	}
	serviceOf := map[string]*corev1.Service{} // Deployment name -> Service
	for name, s := range r.services {
		var matched []string
		for dn, d := range r.deployments {
			if selects(s.Spec.Selector, d.Spec.Template.Labels) {
				matched = append(matched, dn)
			}
		}
		if len(matched) != 1 {
			add("Service "+name, "selector %v selects the pods of %d Deployments %v, want 1", s.Spec.Selector, len(matched), matched)
			continue
		}
		d := r.deployments[matched[0]]
		serviceOf[d.Name] = s
		for _, p := range s.Spec.Ports {
			if _, ok := containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort.String()); !ok {
				add("Service "+name, "port %s targets %s, which is not a container port of Deployment %s", p.Name, p.TargetPort.String(), d.Name)
			}
		}
	}
	// servicePort returns the Service port that reaches a command's
	// container port.
	servicePort := func(cmd string, cport string) (host string, port string, ok bool) {
		d := byCommand[cmd]
		if d == nil {
			return "", "", false
		}
		s := serviceOf[d.Name]
		if s == nil {
			return "", "", false
		}
		for _, p := range s.Spec.Ports {
			if n, ok := containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort.String()); ok && strconv.Itoa(int(n)) == cport {
				return s.Name, strconv.Itoa(int(p.Port)), true
			}
		}
		return s.Name, "", false
	}

	grpcPorts := map[string]string{}
	envOf := map[string]map[string]string{}
	for _, svc := range services {
		d := byCommand[svc]
		if d == nil {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		for _, e := range c.Env {
			if e.Name == "DOCREPO_GRPC_ADDR" {
				grpcPorts[svc] = port(e.Value)
			}
		}
	}
	for _, svc := range services {
		d := byCommand[svc]
		if d == nil {
			continue
		}
		where := "Deployment " + d.Name
		cmd := cmds[svc]
		pod := d.Spec.Template.Spec
		c := pod.Containers[0]
		e := checkEnv(t, r, files, where, c, cmd, add)
		envOf[svc] = e
		for _, v := range listenVars {
			if !cmd.vars[v] {
				continue
			}
			addr, ok := e[v]
			if !ok {
				add(where, "%s is not set (the default listens on loopback only)", v)
				continue
			}
			host, p, err := net.SplitHostPort(addr)
			if err != nil || loopback(host) {
				add(where, "%s=%q: must listen on every interface", v, addr)
				continue
			}
			if n, ok := containerPort(c, p); !ok || strconv.Itoa(int(n)) != p {
				add(where, "%s=%s: port %s is not a container port", v, addr, p)
			}
		}
		for _, v := range sortedKeys(cmd.vars) {
			peer, ok := peerAddrVar(v)
			if !ok || !slices.Contains(services, peer) {
				continue
			}
			addr, ok := e[v]
			if !ok {
				add(where, "%s is not set (its default is loopback)", v)
				continue
			}
			wantHost, wantPort, ok := servicePort(peer, grpcPorts[peer])
			host, p, err := net.SplitHostPort(addr)
			if err != nil || !ok || host != wantHost || p != wantPort {
				add(where, "%s=%s: want %s:%s, the Service of %s's gRPC port", v, addr, wantHost, wantPort, peer)
			}
		}
		for _, v := range []string{"DATABASE_URL", "NATS_URL"} {
			if cmd.vars[v] && e[v] == "" {
				add(where, "%s is not set", v)
			}
		}
		if v, ok := e["DOCREPO_MIGRATE"]; cmd.vars["DOCREPO_MIGRATE"] && ok && v != "true" {
			add(where, "DOCREPO_MIGRATE=%q: each service migrates its own schema at start-up, set it to \"true\"", v)
		}

		// Probes.
		httpPort := "metrics"
		if svc == "gateway" {
			httpPort = "http"
		}
		probe := func(kind string, p *corev1.Probe, wantPath string) {
			switch {
			case p == nil:
				add(where, "no %s probe", kind)
			case p.HTTPGet == nil:
				add(where, "the %s probe is not an HTTP GET of %s", kind, wantPath)
			case p.HTTPGet.Path != wantPath:
				add(where, "the %s probe gets %s, want %s", kind, p.HTTPGet.Path, wantPath)
			default:
				want, _ := containerPort(c, httpPort)
				if got, ok := containerPort(c, p.HTTPGet.Port.String()); !ok || got != want {
					add(where, "the %s probe targets port %s, want the %s port", kind, p.HTTPGet.Port.String(), httpPort)
				}
			}
		}
		probe("liveness", c.LivenessProbe, "/healthz")
		if svc == "gateway" {
			// The admin listener (/metrics, the detailed /readyz) is on
			// its own container port, which Prometheus scrapes through
			// the pod annotation and no Service exposes.
			admin := port(e["DOCREPO_GATEWAY_ADMIN_ADDR"])
			switch {
			case admin == "" || admin == port(e["DOCREPO_HTTP_ADDR"]):
				add(where, "DOCREPO_GATEWAY_ADMIN_ADDR=%q: want a port of its own (the REST port would make /metrics public)", e["DOCREPO_GATEWAY_ADMIN_ADDR"])
			case d.Spec.Template.Annotations["prometheus.io/port"] != admin:
				add(where, "prometheus.io/port %q: want the admin port %s", d.Spec.Template.Annotations["prometheus.io/port"], admin)
			}
			if s := serviceOf[d.Name]; s != nil {
				for _, p := range s.Spec.Ports {
					if n, ok := containerPort(c, p.TargetPort.String()); ok && strconv.Itoa(int(n)) == admin {
						add(where, "Service %s exposes the admin port %s", s.Name, admin)
					}
				}
			}
			// See deploy/k8s/base/gateway.yaml: /readyz would follow the
			// backends and take every gateway out at once.
			probe("readiness", c.ReadinessProbe, "/healthz")
		} else {
			probe("readiness", c.ReadinessProbe, "/readyz")
			if sp := c.StartupProbe; sp == nil || sp.GRPC == nil || strconv.Itoa(int(sp.GRPC.Port)) != grpcPorts[svc] {
				add(where, "no gRPC health startup probe on the gRPC port %s", grpcPorts[svc])
			}
		}

		checkContainerBasics(where, pod, c, add)
		if serviceOf[d.Name] == nil && svc != "indexer" {
			add(where, "no Service selects its pods")
		}
		// A PodDisruptionBudget keeps each service available during
		// node drains.
		var pdbs []string
		for name, pdb := range r.pdbs {
			if pdb.Spec.Selector != nil && selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				pdbs = append(pdbs, name)
			}
		}
		if len(pdbs) != 1 {
			add(where, "covered by %d PodDisruptionBudgets %v, want 1", len(pdbs), pdbs)
		}
	}
	for name, pdb := range r.pdbs {
		matched := 0
		for _, d := range r.deployments {
			if pdb.Spec.Selector != nil && selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				matched++
			}
		}
		if matched == 0 {
			add("PodDisruptionBudget "+name, "selects no pods")
		}
	}

	// Search scales by its HPA, the indexer by its own replica count.
	var searchHPA *autoscalingv2.HorizontalPodAutoscaler
	for name, h := range r.hpas {
		ref := h.Spec.ScaleTargetRef
		target := r.deployments[ref.Name]
		if ref.Kind != "Deployment" || target == nil {
			add("HorizontalPodAutoscaler "+name, "targets %s %s, which is not a rendered Deployment", ref.Kind, ref.Name)
			continue
		}
		if target == byCommand["search"] {
			searchHPA = h
		}
		if target == byCommand["indexer"] {
			add("HorizontalPodAutoscaler "+name, "targets the indexer; the HPA is for search, the indexer is scaled on its own")
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			add("HorizontalPodAutoscaler "+name, "replicas %v..%d: want a minimum of at least 2 and max >= min", h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
	}
	if d := byCommand["search"]; d != nil {
		if searchHPA == nil {
			add("Deployment "+d.Name, "no HorizontalPodAutoscaler scales search")
		} else if d.Spec.Replicas != nil {
			add("Deployment "+d.Name, "sets replicas (%d) although its HPA owns them: every apply would reset the scale", *d.Spec.Replicas)
		}
	}
	if d := byCommand["indexer"]; d != nil && d.Spec.Replicas == nil {
		add("Deployment "+d.Name, "sets no replicas: the indexer is scaled by its own count")
	}
	// Search and the indexer embed with the same settings.
	if a, b := envOf["search"], envOf["indexer"]; a != nil && b != nil {
		for _, v := range sortedKeys(a) {
			if (strings.HasPrefix(v, "DOCREPO_EMBED") || strings.HasPrefix(v, "DOCREPO_USE_")) && a[v] != b[v] {
				add("Deployment search", "%s=%q but the indexer has %q", v, a[v], b[v])
			}
		}
	}
	if a, b := envOf["gateway"], envOf["document"]; a != nil && b != nil && a["DOCREPO_MAX_UPLOAD_BYTES"] != b["DOCREPO_MAX_UPLOAD_BYTES"] {
		add("Deployment gateway", "DOCREPO_MAX_UPLOAD_BYTES=%q but the document service has %q", a["DOCREPO_MAX_UPLOAD_BYTES"], b["DOCREPO_MAX_UPLOAD_BYTES"])
	}
	for _, svc := range []string{"search", "indexer"} {
		if e := envOf[svc]; e != nil && e["OPENSEARCH_URL"] == "" {
			add("Deployment "+svc, "OPENSEARCH_URL is not set: search reads, the indexer writes OpenSearch")
		}
	}
	for _, svc := range []string{"indexer", "folder"} {
		if e := envOf[svc]; e != nil && !strings.HasPrefix(e["DOCREPO_SERVICE_TOKEN"], "secret:") {
			add("Deployment "+svc, "DOCREPO_SERVICE_TOKEN does not come from a Secret")
		}
	}
	if e := envOf["document"]; e != nil {
		for _, v := range []string{"MINIO_ENDPOINT", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_BUCKET"} {
			if e[v] == "" {
				add("Deployment document", "%s is not set: blobs go to MinIO/S3", v)
			}
		}
	}

	// The migrate Job.
	var migrate []string
	for name, j := range r.jobs {
		where := "Job " + name
		pod := j.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			add(where, "want one container")
			continue
		}
		c := pod.Containers[0]
		cmd := cmds[imageCommand(c.Image)]
		if cmd == nil {
			add(where, "runs %s, not a docrepo command", c.Image)
			continue
		}
		if imageCommand(c.Image) == "docrepoctl" && slices.Equal(c.Args, []string{"bootstrap", "-check"}) {
			migrate = append(migrate, name)
		}
		e := checkEnv(t, r, files, where, c, cmd, add)
		for _, v := range []string{"DATABASE_URL", "DOCREPO_SERVICE_TOKEN"} {
			if !strings.HasPrefix(e[v], "secret:") {
				add(where, "%s must come from a Secret", v)
			}
		}
		if pod.RestartPolicy != corev1.RestartPolicyOnFailure && pod.RestartPolicy != corev1.RestartPolicyNever {
			add(where, "restartPolicy %q", pod.RestartPolicy)
		}
		checkContainerBasics(where, pod, c, add)
	}
	if len(migrate) != 1 {
		add("Job", "want one migrate Job running docrepoctl bootstrap -check, have %v", migrate)
	}
	sort.Strings(problems)
	return problems
}

// checkContainerBasics: resources, and a non-root, read-only container.
func checkContainerBasics(where string, pod corev1.PodSpec, c corev1.Container, add func(string, string, ...any)) {
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[res]; !ok {
			add(where, "no %s request", res)
		}
		if _, ok := c.Resources.Limits[res]; !ok {
			add(where, "no %s limit", res)
		}
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		add(where, "the pod does not require runAsNonRoot")
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		add(where, "the container must have a read-only root filesystem and no privilege escalation")
	}
}

func TestKubernetes(t *testing.T) {
	files := k8sFiles(t)
	for _, k := range kustomizations {
		t.Run(k, func(t *testing.T) {
			r, err := render(files, k)
			if err != nil {
				t.Fatalf("kustomize build %s/%s: %v", k8sDir, k, err)
			}
			for _, problem := range checkK8s(t, r, files) {
				t.Error(problem)
			}
		})
	}
	t.Run("overlay", func(t *testing.T) {
		r, err := render(files, "overlays/example")
		if err != nil {
			t.Fatal(err)
		}
		if d := r.deployments["indexer"]; d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			t.Error("the example overlay scales the indexer to 2")
		}
		if h := r.hpas["search"]; h == nil || h.Spec.MaxReplicas != 20 {
			t.Error("the example overlay raises search's HPA maximum to 20")
		}
		for name, d := range r.deployments {
			if d.Namespace != "docrepo" {
				t.Errorf("Deployment %s in namespace %q, want docrepo", name, d.Namespace)
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "registry.example.com/docrepo/") {
				t.Errorf("Deployment %s runs %s, want the overlay's registry", name, img)
			}
		}
	})
}

// TestKubernetesCheckCatchesMistakes mutates in-memory copies of the
// manifests and expects each mistake to be reported.
func TestKubernetesCheckCatchesMistakes(t *testing.T) {
	files := k8sFiles(t)
	tests := []struct {
		name     string
		file     string
		old, new string
		want     string
	}{
		{
			name: "unknown variable",
			file: "base/folder.yaml",
			old:  "            - name: DOCREPO_MIGRATE\n",
			new:  "            - name: DOCREPO_FOLDER_CACHE\n              value: \"1\"\n            - name: DOCREPO_MIGRATE\n",
			want: "Deployment folder: unknown variable DOCREPO_FOLDER_CACHE",
		},
		{
			name: "Service selector matches nothing",
			file: "base/schema.yaml",
			old:  "  clusterIP: None\n  selector:\n    app.kubernetes.io/name: schema\n",
			new:  "  clusterIP: None\n  selector:\n    app.kubernetes.io/name: schemas\n",
			want: "Service schema: selector map[app.kubernetes.io/name:schemas] selects the pods of 0 Deployments",
		},
		{
			name: "Service targets a port the container lacks",
			file: "base/gateway.yaml",
			old:  "      targetPort: http\n",
			new:  "      targetPort: web\n",
			want: "Service gateway: port http targets web, which is not a container port",
		},
		{
			name: "HPA targets another Deployment",
			file: "base/search.yaml",
			old:  "    kind: Deployment\n    name: search\n",
			new:  "    kind: Deployment\n    name: indexer\n",
			want: "HorizontalPodAutoscaler search: targets the indexer",
		},
		{
			name: "HPA targets nothing",
			file: "base/search.yaml",
			old:  "    kind: Deployment\n    name: search\n",
			new:  "    kind: Deployment\n    name: searcher\n",
			want: "targets Deployment searcher, which is not a rendered Deployment",
		},
		{
			name: "PDB selects no pods",
			file: "base/document.yaml",
			old:  "  minAvailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: document\n",
			new:  "  minAvailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: documents\n",
			want: "PodDisruptionBudget document: selects no pods",
		},
		{
			name: "gateway Service exposes the admin port",
			file: "base/gateway.yaml",
			old:  "      targetPort: http\n      appProtocol: http\n",
			new:  "      targetPort: http\n      appProtocol: http\n    - name: admin\n      port: 9116\n      targetPort: admin\n",
			want: "Deployment gateway: Service gateway exposes the admin port 9116",
		},
		{
			name: "gateway scraped on the REST port",
			file: "base/gateway.yaml",
			old:  "prometheus.io/port: \"9116\"",
			new:  "prometheus.io/port: \"8080\"",
			want: "Deployment gateway: prometheus.io/port \"8080\": want the admin port 9116",
		},
		{
			name: "gateway routes to the metrics port",
			file: "base/gateway.yaml",
			old:  "value: \"search:9103\"",
			new:  "value: \"search:9113\"",
			want: "Deployment gateway: DOCREPO_SEARCH_ADDR=search:9113: want search:9103",
		},
		{
			name: "no readiness probe",
			file: "base/folder.yaml",
			old:  "          readinessProbe:\n            httpGet:\n              path: /readyz\n",
			new:  "          x-readiness:\n            httpGet:\n              path: /readyz\n",
			want: "unknown field", // strict decoding refuses the misspelled field
		},
		{
			name: "readiness probe on the wrong path",
			file: "base/folder.yaml",
			old:  "              path: /readyz\n",
			new:  "              path: /healthz\n",
			want: "Deployment folder: the readiness probe gets /healthz, want /readyz",
		},
		{
			name: "literal secret",
			file: "base/document.yaml",
			old:  "            - name: MINIO_SECRET_KEY\n              valueFrom:\n                secretKeyRef:\n                  name: docrepo-minio\n                  key: MINIO_SECRET_KEY\n",
			new:  "            - name: MINIO_SECRET_KEY\n              value: hunter2\n",
			want: "Deployment document: MINIO_SECRET_KEY is a literal value",
		},
		{
			name: "folder without the service token",
			file: "base/folder.yaml",
			old:  "name: DOCREPO_SERVICE_TOKEN\n",
			new:  "name: DOCREPO_SERVICE_TOKEN_UNUSED\n",
			want: "Deployment folder: DOCREPO_SERVICE_TOKEN does not come from a Secret",
		},
		{
			name: "undocumented Secret",
			file: "base/indexer.yaml",
			old:  "name: docrepo-service-token",
			new:  "name: docrepo-indexer-token",
			want: "Secret docrepo-indexer-token (key DOCREPO_SERVICE_TOKEN) is neither rendered nor documented",
		},
		{
			name: "missing ConfigMap key",
			file: "base/kustomization.yaml",
			old:  "      - OPENSEARCH_URL=http://opensearch:9200\n",
			new:  "",
			want: "Deployment search: OPENSEARCH_URL: ConfigMap",
		},
		{
			name: "embedders differ",
			file: "base/indexer.yaml",
			old:  "            - name: DOCREPO_EMBEDDER\n              valueFrom:\n                configMapKeyRef:\n                  name: docrepo-config\n                  key: DOCREPO_EMBEDDER\n",
			new:  "            - name: DOCREPO_EMBEDDER\n              value: openai\n",
			want: "Deployment search: DOCREPO_EMBEDDER=\"use\" but the indexer has \"openai\"",
		},
		{
			name: "upload limits differ",
			file: "base/gateway.yaml",
			old:  "            - name: DOCREPO_MAX_UPLOAD_BYTES\n              valueFrom:\n                configMapKeyRef:\n                  name: docrepo-config\n                  key: DOCREPO_MAX_UPLOAD_BYTES\n",
			new:  "            - name: DOCREPO_MAX_UPLOAD_BYTES\n              value: \"1024\"\n",
			want: "Deployment gateway: DOCREPO_MAX_UPLOAD_BYTES=\"1024\" but the document service has \"10737418240\"",
		},
		{
			name: "search replicas fight the HPA",
			file: "base/search.yaml",
			old:  "spec:\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: search\n",
			new:  "spec:\n  replicas: 3\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: search\n",
			want: "Deployment search: sets replicas (3) although its HPA owns them",
		},
		{
			name: "write path requests as much CPU as search",
			file: "base/document.yaml",
			old:  "              cpu: 100m\n              memory: 128Mi\n",
			new:  "              cpu: 250m\n              memory: 128Mi\n",
			want: "Deployment document: CPU request 250m is not below search's 250m",
		},
		{
			name: "no resources",
			file: "base/schema.yaml",
			old:  "              cpu: 50m\n              memory: 64Mi\n",
			new:  "              memory: 64Mi\n",
			want: "Deployment schema: no cpu request",
		},
		{
			name: "name prefix breaks the peer addresses",
			file: "overlays/example/kustomization.yaml",
			old:  "namespace: docrepo\n",
			new:  "namespace: docrepo\nnamePrefix: prod-\n",
			want: "Deployment prod-gateway: DOCREPO_DOCUMENT_ADDR=document:9101: want prod-document:9101",
		},
		{
			name: "migrate Job does not check the token",
			file: "base/migrate-job.yaml",
			old:  "args: [\"bootstrap\", \"-check\"]",
			new:  "args: [\"migrate\"]",
			want: "Job: want one migrate Job running docrepoctl bootstrap -check",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutated := map[string]string{}
			for k, v := range files {
				mutated[k] = v
			}
			orig, ok := files[tt.file]
			if !ok {
				t.Fatalf("no file %s", tt.file)
			}
			mutated[tt.file] = strings.Replace(orig, tt.old, tt.new, 1)
			if mutated[tt.file] == orig {
				t.Fatalf("the mutation does not apply: %q is not in %s", tt.old, tt.file)
			}
			kustomization := "base"
			if strings.HasPrefix(tt.file, "overlays/example/") {
				kustomization = "overlays/example"
			}
			r, err := render(mutated, kustomization)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("render error %v, want it to mention %q", err, tt.want)
				}
				return
			}
			problems := checkK8s(t, r, mutated)
			for _, p := range problems {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Fatalf("mutation not reported; want %q, got:\n%s", tt.want, strings.Join(problems, "\n"))
		})
	}
}
