// Package rules holds the default GlobalHealthRuleSets, one file per group or
// project, and embeds them for `kubectl convoy rules test`, which evaluates
// them offline. The local control plane and the deploy overlay apply the
// YAML files of this directory (not of its subdirectories: source/ is what
// hack/gen-rules generates them from, cases/ their cases); kubectl skips
// this file.
package rules

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// Files are the default rule sets, *.yaml.
//
//go:embed *.yaml
var Files embed.FS

// Default returns the default rule sets, decoded strictly (an unknown field
// is an error), in the order of their file names.
func Default() ([]*convoyv1alpha1.GlobalHealthRuleSet, error) {
	names, err := fs.Glob(Files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]*convoyv1alpha1.GlobalHealthRuleSet, 0, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(Files, name)
		if err != nil {
			return nil, err
		}
		var set convoyv1alpha1.GlobalHealthRuleSet
		if err := yaml.UnmarshalStrict(data, &set); err != nil {
			return nil, fmt.Errorf("default rule set %s: %w", name, err)
		}
		out = append(out, &set)
	}
	return out, nil
}
