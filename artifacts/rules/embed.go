// Package rules holds the default GlobalHealthRuleSets, one file per group or
// project, and embeds them for `kubectl convoy rules test`, which evaluates
// them offline. The local control plane and the deploy overlay apply the
// YAML files of this directory; kubectl skips this file.
package rules

import "embed"

// Files are the default rule sets, *.yaml.
//
//go:embed *.yaml
var Files embed.FS
