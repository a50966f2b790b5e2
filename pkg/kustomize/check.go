// Package kustomize builds kustomize overlays from the files of a Release's
// source, and only from them. kustomize fetches what a kustomization names
// but does not find (a remote base with git, a URL with a plain HTTP
// client) and runs plugins and functions, whatever the file system it is
// given; so Check walks every kustomization reachable from a directory
// first, refuses all of that with a reason before anything is built, and
// bounds the walk. Build then runs kustomize's own library (krusty) on an
// in-memory file system that holds only the source's files, with the load
// restrictor root-only and plugins disabled, as kubectl kustomize does.
// convoy-apiserver calls Build in the render's child process (pkg/render's
// Sandbox), which has no network: a backstop, not the guard.
package kustomize

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Reasons of a kustomization that is refused or does not build.
var (
	ReasonKustomizeRemoteRefused = failure.Declare(failure.Reason{
		Name: "KustomizeRemoteRefused", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "a kustomization names a URL, or a resource, base or component that is not a file or directory of the source (kustomize would fetch it with git or HTTP); nothing was fetched",
		Action: "put the base in the source (vendor it, or publish one bundle that holds it) and name it by a relative path",
	})
	ReasonKustomizePluginRefused = failure.Declare(failure.Reason{
		Name: "KustomizePluginRefused", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "a kustomization inflates a Helm chart (helmCharts, HelmChartInflationGenerator), or names a plugin, an exec or a container function: none runs in convoy",
		Action: "render the chart as a Release of its own, or commit the plugin's output; builtin generators and transformers (apiVersion: builtin) are allowed",
	})
	ReasonKustomizeInvalid = failure.Declare(failure.Reason{
		Name: "KustomizeInvalid", Class: failure.ClassInvalid, Shows: failure.InSyncAndResponse,
		Means:  "a kustomization that does not parse, a cycle of bases, or a build that kustomize refuses; the message is kustomize's",
		Action: "run kubectl kustomize on the same directory, which shows the same error, and correct the kustomization",
	})
	ReasonKustomizeTooLarge = failure.Declare(failure.Reason{
		Name: "KustomizeTooLarge", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
		Means:  "the kustomizations reachable from the path pass a limit of the walk: depth of bases, kustomizations built, files or bytes read",
		Action: "flatten the overlay; the limits are in the sources docs",
	})
)

// Limits bound the walk of Check. Zero fields take their defaults.
type Limits struct {
	// MaxDepth bounds the chain of kustomizations from the directory to
	// its deepest base or component (default 20).
	MaxDepth int
	// MaxBuilds bounds how many kustomizations kustomize builds: a base
	// named by two overlays is built twice, so a chain of overlays that
	// each name the next twice would build its last one 2^depth times
	// (default 500).
	MaxBuilds int
	// MaxFiles and MaxBytes bound the kustomizations and plugin
	// configurations the walk reads (default 2,000 files, 16 MiB).
	MaxFiles int
	MaxBytes int
}

// Defaults of Limits.
const (
	DefaultMaxDepth  = 20
	DefaultMaxBuilds = 500
	DefaultMaxFiles  = 2000
	DefaultMaxBytes  = 16 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxBuilds <= 0 {
		l.MaxBuilds = DefaultMaxBuilds
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// FileNames are the names of a kustomization in a directory, in the order
// kustomize looks for them.
var FileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Files is a source's files by clean relative path ("a/b.yaml"), the
// directories they imply included.
type Files struct {
	data map[string][]byte
	dirs map[string]bool
	// omitted are files of the source left out of data (over a limit of
	// the source), and the directories they imply.
	omitted, omittedDirs map[string]bool
	// links are the source's links, which are not in data.
	links map[string]bool
}

// Omit records files of the source that were left out of f to keep it
// within a limit: a kustomization that names one, or a directory of them,
// is KustomizeTooLarge, not a remote base. It returns f.
func (f *Files) Omit(names []string) *Files {
	f.omitted, f.omittedDirs = map[string]bool{}, map[string]bool{}
	for _, name := range names {
		f.omitted[name] = true
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			f.omittedDirs[d] = true
		}
	}
	return f
}

// Links records the links of the source (symbolic and hard links,
// submodules), which are not among f's files: a kustomization that names
// one, or a name under one, is LinkUnsupported, not a remote base. It
// returns f.
func (f *Files) Links(names []string) *Files {
	f.links = map[string]bool{}
	for _, name := range names {
		f.links[name] = true
	}
	return f
}

// leftOut is the refusal of a name that was left out of the files: a
// file omitted, or a directory of them; a link, or a name under one. nil
// for another.
func (w *walker) leftOut(file, field, name, target string) error {
	for d := target; d != "." && d != ""; d = path.Dir(d) {
		if w.files.links[d] {
			return failure.New(failure.ReasonLinkUnsupported, nil, "%s: %s: %s %q names a link of the source (%s), which is not followed", w.where, file, field, name, d)
		}
	}
	if !w.files.omitted[target] && !w.files.omittedDirs[target] {
		return nil
	}
	return failure.New(ReasonKustomizeTooLarge, nil, "%s: %s: %s %q was left out of the source's files, which pass --max-artifact-bytes", w.where, file, field, name)
}

// NewFiles indexes files (name → content); names are clean relative paths.
func NewFiles(files map[string][]byte) *Files {
	f := &Files{data: files, dirs: map[string]bool{"": true}}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			f.dirs[d] = true
		}
	}
	return f
}

// IsDir tells whether dir ("" for the root) holds a file.
func (f *Files) IsDir(dir string) bool { return f.dirs[dir] }

// Kustomization returns the name of the kustomization file of dir, "" if
// it holds none.
func (f *Files) Kustomization(dir string) string {
	for _, n := range FileNames {
		if _, ok := f.data[join(dir, n)]; ok {
			return join(dir, n)
		}
	}
	return ""
}

// Plan is what Check found: the directories of the kustomizations
// reachable from the one checked, sorted. kustomize reads files under
// these directories only (root-only), so they are what a build depends on.
type Plan struct {
	Roots []string
}

// Under returns the names of files under the Plan's roots, sorted.
func (p *Plan) Under(files *Files) []string {
	var out []string
	for name := range files.data {
		for _, r := range p.Roots {
			if r == "" || name == r || strings.HasPrefix(name, r+"/") {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// Check walks the kustomization of dir and every kustomization it reaches
// (resources, bases, components) and, before any is built, refuses what
// kustomize would fetch, clone or run (a URL, a remote base, Helm, a plugin
// or a KRM function), a kustomization that does not parse, a cycle, and a
// walk past limits: the refusals and their reasons are in
// docs/users/directories.md. where names the source in messages.
func Check(where string, files *Files, dir string, limits Limits) (*Plan, error) {
	w := &walker{where: where, files: files, limits: limits.withDefaults(), builds: map[string]int{}, onStack: map[string]bool{}}
	if _, err := w.kustomization(dir, 1); err != nil {
		return nil, err
	}
	plan := &Plan{}
	for d := range w.builds {
		plan.Roots = append(plan.Roots, d)
	}
	slices.Sort(plan.Roots)
	return plan, nil
}

type walker struct {
	where  string
	files  *Files
	limits Limits
	// builds is how many times kustomize builds each kustomization
	// reached, by its directory, counting the one walked once.
	builds  map[string]int
	onStack map[string]bool
	read    int
	bytes   int
}

// kustomization walks the kustomization of dir at depth, and returns how
// many kustomizations kustomize builds for it (itself and its bases, with
// repeats).
func (w *walker) kustomization(dir string, depth int) (int, error) {
	if n, ok := w.builds[dir]; ok {
		if w.onStack[dir] {
			return 0, failure.New(ReasonKustomizeInvalid, nil, "%s: the kustomization of %s names itself through its bases", w.where, display(dir))
		}
		return n, nil
	}
	if depth > w.limits.MaxDepth {
		return 0, failure.New(ReasonKustomizeTooLarge, nil, "%s: the kustomization of %s is nested more than %d deep", w.where, display(dir), w.limits.MaxDepth)
	}
	file := w.files.Kustomization(dir)
	if file == "" {
		return 0, failure.New(ReasonKustomizeInvalid, nil, "%s: directory %s holds no kustomization (%s)", w.where, display(dir), strings.Join(FileNames, ", "))
	}
	data, err := w.readFile(file)
	if err != nil {
		return 0, err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return 0, failure.New(ReasonKustomizeInvalid, err, "%s: %s", w.where, file)
	}
	for _, ref := range fileRefs(&k) {
		if err := w.fileRef(dir, file, ref); err != nil {
			return 0, err
		}
	}
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil || len(k.HelmChartInflationGenerator) > 0 {
		return 0, failure.New(ReasonKustomizePluginRefused, nil, "%s: %s inflates Helm charts (helmCharts), which convoy does not run: render the chart as a Release of its own", w.where, file)
	}
	for field, entries := range map[string][]string{"generators": k.Generators, "transformers": k.Transformers, "validators": k.Validators} {
		for _, e := range entries {
			if err := w.plugin(dir, file, field, e); err != nil {
				return 0, err
			}
		}
	}

	w.builds[dir] = 0
	w.onStack[dir] = true
	defer delete(w.onStack, dir)
	builds := 1
	for field, entries := range map[string][]string{"resources": k.Resources, "bases": k.Bases, "components": k.Components} {
		for _, e := range entries {
			target := join(dir, e)
			switch {
			case isURL(e):
				return 0, failure.New(ReasonKustomizeRemoteRefused, nil, "%s: %s: %s %q is a URL, which kustomize would fetch over the network; convoy builds from the source's files only", w.where, file, field, e)
			case escapes(dir, e):
				return 0, failure.New(ReasonKustomizeRemoteRefused, nil, "%s: %s: %s %q leaves the source's root", w.where, file, field, e)
			case w.files.has(target):
			case w.files.IsDir(target):
				n, err := w.kustomization(target, depth+1)
				if err != nil {
					return 0, err
				}
				builds += n
				if builds > w.limits.MaxBuilds {
					return 0, failure.New(ReasonKustomizeTooLarge, nil, "%s: building %s builds more than %d kustomizations (a base named more than once is built each time)", w.where, display(dir), w.limits.MaxBuilds)
				}
			default:
				if err := w.leftOut(file, field, e, target); err != nil {
					return 0, err
				}
				return 0, failure.New(ReasonKustomizeRemoteRefused, nil, "%s: %s: %s %q is not a file or directory of the source; kustomize would fetch it as a remote base, which convoy does not do", w.where, file, field, e)
			}
		}
	}
	w.builds[dir] = builds
	return builds, nil
}

// plugin checks one entry of generators, transformers or validators: an
// inline configuration or a file of them.
func (w *walker) plugin(dir, file, field, entry string) error {
	where := fmt.Sprintf("%s: %s: %s", w.where, file, field)
	data := []byte(entry)
	if !isInline(entry) {
		target := join(dir, entry)
		switch {
		case escapes(dir, entry):
			return failure.New(ReasonKustomizeRemoteRefused, nil, "%s: %q leaves the source's root", where, entry)
		case w.files.IsDir(target):
			return failure.New(ReasonKustomizePluginRefused, nil, "%s: %q is a directory: a kustomization of plugin configurations is not supported, name their files", where, entry)
		case !w.files.has(target):
			return failure.New(ReasonKustomizeInvalid, nil, "%s: %q is not a file of the source", where, entry)
		}
		var err error
		if data, err = w.readFile(target); err != nil {
			return err
		}
		where = fmt.Sprintf("%s file %s", where, target)
	}
	docs, err := splitDocuments(data)
	if err != nil {
		return failure.New(ReasonKustomizeInvalid, err, "%s", where)
	}
	for _, doc := range docs {
		// A builtin's fields that name files are many (path, files, envs,
		// ...): a URL anywhere in it is refused.
		if s, ok := findURL(doc); ok {
			return failure.New(ReasonKustomizeRemoteRefused, nil, "%s names %q, which kustomize would fetch over the network; convoy builds from the source's files only", where, s)
		}
		apiVersion, _ := doc["apiVersion"].(string)
		kind, _ := doc["kind"].(string)
		if meta, ok := doc["metadata"].(map[string]any); ok {
			if ann, ok := meta["annotations"].(map[string]any); ok {
				for _, a := range []string{"config.kubernetes.io/function", "config.k8s.io/function"} {
					if _, ok := ann[a]; ok {
						return failure.New(ReasonKustomizePluginRefused, nil, "%s: %s %s is a KRM function (%s), which convoy does not run", where, apiVersion, kind, a)
					}
				}
			}
		}
		switch {
		case kind == "HelmChartInflationGenerator":
			return failure.New(ReasonKustomizePluginRefused, nil, "%s: %s inflates a Helm chart, which convoy does not run", where, kind)
		case apiVersion != "builtin":
			return failure.New(ReasonKustomizePluginRefused, nil, "%s: %s %s is a plugin (only apiVersion: builtin is allowed)", where, apiVersion, kind)
		}
	}
	return nil
}

// readFile reads a file for the walk, within its limits.
func (w *walker) readFile(name string) ([]byte, error) {
	data := w.files.data[name]
	w.read++
	w.bytes += len(data)
	if w.read > w.limits.MaxFiles {
		return nil, failure.New(ReasonKustomizeTooLarge, nil, "%s: the kustomizations reachable read more than %d files", w.where, w.limits.MaxFiles)
	}
	if w.bytes > w.limits.MaxBytes {
		return nil, failure.New(ReasonKustomizeTooLarge, nil, "%s: the kustomizations reachable read more than %d bytes", w.where, w.limits.MaxBytes)
	}
	return data, nil
}

// fileRef is a field of a kustomization that names a file.
type fileRef struct {
	field, name string
}

// fileRefs returns the files k names beside its resources, bases,
// components and plugins: kustomize reads each with its loader, which GETs
// an http or https URL.
func fileRefs(k *types.Kustomization) []fileRef {
	var out []fileRef
	add := func(field string, names ...string) {
		for _, n := range names {
			if n != "" {
				out = append(out, fileRef{field, n})
			}
		}
	}
	add("crds", k.Crds...)
	add("configurations", k.Configurations...)
	add("openapi.path", k.OpenAPI["path"])
	for _, p := range k.Patches {
		add("patches.path", p.Path)
	}
	for _, p := range k.PatchesJson6902 {
		add("patchesJson6902.path", p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		if !isInline(string(p)) {
			add("patchesStrategicMerge", string(p))
		}
	}
	for _, r := range k.Replacements {
		add("replacements.path", r.Path)
	}
	gen := func(field string, args types.GeneratorArgs) {
		for _, f := range args.FileSources {
			// "key=path" or "path", as kustomize reads them.
			_, name, _ := strings.Cut(f, "=")
			if !strings.Contains(f, "=") {
				name = f
			}
			add(field+".files", name)
		}
		add(field+".envs", args.EnvSources...)
		add(field+".env", args.EnvSource)
	}
	for _, g := range k.ConfigMapGenerator {
		gen("configMapGenerator", g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		gen("secretGenerator", g.GeneratorArgs)
	}
	return out
}

// fileRef checks a file that the kustomization file of dir names: a URL is
// refused, and so is a name that is not a file of the source.
func (w *walker) fileRef(dir, file string, ref fileRef) error {
	if isURL(ref.name) {
		return failure.New(ReasonKustomizeRemoteRefused, nil, "%s: %s: %s %q is a URL, which kustomize would fetch over the network; convoy builds from the source's files only", w.where, file, ref.field, ref.name)
	}
	if err := w.leftOut(file, ref.field, ref.name, join(dir, ref.name)); err != nil {
		return err
	}
	if escapes(dir, ref.name) || !w.files.has(join(dir, ref.name)) {
		return failure.New(ReasonKustomizeInvalid, nil, "%s: %s: %s %q is not a file of the source under %s", w.where, file, ref.field, ref.name, display(dir))
	}
	return nil
}

// isURL tells whether s parses as an http or https URL, as kustomize's
// loader tells a remote file.
func isURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	return err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https"))
}

// findURL returns the first string of v, a value decoded from JSON, that
// is (or holds, as in "key=URL" of a generator's files) an http or https
// URL.
func findURL(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		_, value, _ := strings.Cut(v, "=")
		if isURL(v) || isURL(value) {
			return v, true
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, ok := findURL(v[k]); ok {
				return s, true
			}
		}
	case []any:
		for _, e := range v {
			if s, ok := findURL(e); ok {
				return s, true
			}
		}
	}
	return "", false
}

// splitDocuments decodes the YAML documents of data to JSON values,
// skipping empty ones.
func splitDocuments(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			return nil, fmt.Errorf("document %d is not a mapping: %w", i, err)
		}
		out = append(out, m)
	}
}

// isInline tells an inline configuration from a file name, as kustomize
// does for generators, transformers and patchesStrategicMerge: a YAML
// object spans lines or is a flow mapping.
func isInline(entry string) bool {
	t := strings.TrimSpace(entry)
	return strings.Contains(t, "\n") || strings.HasPrefix(t, "{")
}

// has tells whether name is a file.
func (f *Files) has(name string) bool {
	_, ok := f.data[name]
	return ok
}

// join joins a directory and a relative name, cleaned; "" is the root.
func join(dir, name string) string {
	p := path.Join(dir, name)
	if p == "." {
		return ""
	}
	return p
}

// escapes tells whether name, relative to dir, leaves the source's root
// (or is absolute): kustomize would look for it on the machine.
func escapes(dir, name string) bool {
	if path.IsAbs(name) {
		return true
	}
	p := path.Join(dir, name)
	return p == ".." || strings.HasPrefix(p, "../")
}

// display names a directory in messages.
func display(dir string) string {
	if dir == "" {
		return "the source's root"
	}
	return "directory " + dir
}
