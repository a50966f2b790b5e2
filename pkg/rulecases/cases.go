// Package rulecases reads the case files of health rules and runs them: for
// each case, an object and the state and message its author expects the
// rules to give it. `kubectl convoy rules test --cases` and the tests of the
// default rule sets (artifacts/rules/cases) run the same cases through this
// package; the format of a case file: docs/users/rule-cases.md.
package rulecases

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// MaxFileBytes bounds a case file and an object file.
const MaxFileBytes = 16 << 20

// File is the content of a case file.
type File struct {
	// Cases are the cases, run in order.
	Cases []Case `json:"cases"`
}

// Case is one object and what the rules should say of it.
type Case struct {
	// Name says what the object shows; unique in its file.
	Name string `json:"name"`
	// Source says where the object comes from (a cluster, the upstream
	// project's documentation or source). Optional; the default rule
	// sets' cases all have one.
	Source string `json:"source,omitempty"`
	// State is the state the rules should give: Healthy, Progressing,
	// Suspended or Unknown (a rule that cannot be evaluated). Degraded is
	// never a rule's verdict: the health loop gives it once a Release's
	// deadline passes.
	State convoyv1alpha1.HealthState `json:"state"`
	// Message is the message the rules should give, exactly. For a
	// Healthy case it may be left out (the message is not checked).
	Message string `json:"message,omitempty"`
	// MessagePattern is, instead of Message, an RE2 regular expression
	// the message must match (unanchored: use ^ and $).
	MessagePattern string `json:"messagePattern,omitempty"`
	// Object is the live object, as `kubectl get -o yaml` prints it.
	Object map[string]any `json:"object,omitempty"`
	// ObjectFile is, instead of Object, a file holding the one object,
	// relative to the case file.
	ObjectFile string `json:"objectFile,omitempty"`

	// File is the case file the case comes from.
	File string `json:"-"`
	// object is the object decoded as the API machinery decodes JSON
	// (integers as int64).
	object *unstructured.Unstructured
	// pattern is MessagePattern compiled.
	pattern *regexp.Regexp
}

// ID names the case in reports: FILE: NAME.
func (c *Case) ID() string { return c.File + ": " + c.Name }

// Load reads the case files of paths: files, and the .yaml, .yml and .json
// files of directories (and of their subdirectories with recursive). A file
// or case that is not valid is an error naming it; nothing is run then.
func Load(paths []string, recursive bool) ([]*Case, error) {
	var files []string
	for _, p := range paths {
		found, err := caseFiles(p, recursive)
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	var out []*Case
	for _, f := range files {
		cases, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, cases...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cases in %s", strings.Join(paths, ", "))
	}
	return out, nil
}

// caseFiles are the files of path: itself when it is a file, else its
// YAML and JSON files in name order.
func caseFiles(path string, recursive bool) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// LoadFile reads and checks the cases of one file.
func LoadFile(path string) ([]*Case, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not a case file: %w", path, err)
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases (a case file holds a list under cases:)", path)
	}
	names := map[string]bool{}
	out := make([]*Case, 0, len(f.Cases))
	for i := range f.Cases {
		c := &f.Cases[i]
		c.File = path
		if err := c.complete(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("%s: case %d (%q): %w", path, i+1, c.Name, err)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("%s: two cases are named %q", path, c.Name)
		}
		names[c.Name] = true
		out = append(out, c)
	}
	return out, nil
}

// complete checks c and decodes its object and pattern; dir is the case
// file's directory.
func (c *Case) complete(dir string) error {
	if strings.TrimSpace(c.Name) == "" {
		return errors.New("no name")
	}
	switch c.State {
	case convoyv1alpha1.HealthHealthy, convoyv1alpha1.HealthProgressing, convoyv1alpha1.HealthSuspended, convoyv1alpha1.HealthUnknown:
	case convoyv1alpha1.HealthDegraded:
		return errors.New("state Degraded: no rule gives it (a failing rule gives Progressing; the health loop turns it Degraded once the Release's deadline passes): expect Progressing")
	case "":
		return errors.New("no state: say Healthy, Progressing, Suspended or Unknown")
	default:
		return fmt.Errorf("unknown state %q: say Healthy, Progressing, Suspended or Unknown", c.State)
	}
	switch {
	case c.Message != "" && c.MessagePattern != "":
		return errors.New("message and messagePattern: give one")
	case c.State != convoyv1alpha1.HealthHealthy && c.Message == "" && c.MessagePattern == "":
		return fmt.Errorf("state %s with no message: give message or messagePattern", c.State)
	}
	if c.MessagePattern != "" {
		re, err := regexp.Compile(c.MessagePattern)
		if err != nil {
			return fmt.Errorf("messagePattern: %w", err)
		}
		c.pattern = re
	}
	raw := c.Object
	switch {
	case raw != nil && c.ObjectFile != "":
		return errors.New("object and objectFile: give one")
	case raw == nil && c.ObjectFile == "":
		return errors.New("no object: give object or objectFile")
	case c.ObjectFile != "":
		obj, err := readObjectFile(dir, c.ObjectFile)
		if err != nil {
			return fmt.Errorf("objectFile: %w", err)
		}
		c.object = obj
	default:
		data, err := yaml.Marshal(raw)
		if err != nil {
			return fmt.Errorf("object: %w", err)
		}
		obj, err := decodeObject(data)
		if err != nil {
			return fmt.Errorf("object: %w", err)
		}
		c.object = obj
	}
	return nil
}

// readObjectFile reads the one object of the file name, which must be in
// dir (the case file's directory) or under it: a name that leaves it (an
// absolute name, a .. element, a symbolic link out of it) is refused, so
// that a case file from elsewhere (a chart, a pull request) reads nothing
// else of the machine that runs it.
func readObjectFile(dir, name string) (*unstructured.Unstructured, error) {
	path := filepath.Join(dir, name)
	if !filepath.IsLocal(name) {
		return nil, fmt.Errorf("%q is not in the directory of the case file or under it", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	data, err := readBoundedFrom(f, path)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(data)
	trimmed = bytes.TrimPrefix(trimmed, []byte("---"))
	if bytes.Contains(trimmed, []byte("\n---")) {
		return nil, fmt.Errorf("%s: more than one document: an object file holds one object", path)
	}
	obj, err := decodeObject(trimmed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

// decodeObject decodes one object from YAML or JSON as the API machinery
// decodes JSON, and checks it has an apiVersion and a kind.
func decodeObject(data []byte) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	if obj.IsList() {
		return nil, errors.New("a list: a case holds one object")
	}
	if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
		return nil, errors.New("an object has an apiVersion and a kind")
	}
	return obj, nil
}

// readBounded reads path, refusing a file over MaxFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBoundedFrom(f, path)
}

// readBoundedFrom reads f, named path, up to MaxFileBytes.
func readBoundedFrom(f io.Reader, path string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, MaxFileBytes>>20)
	}
	return data, nil
}
