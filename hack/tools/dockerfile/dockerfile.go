// Package dockerfile reads the repository's Dockerfile with BuildKit's own
// parser, and the image `make image` builds (hack/image), so that its tests
// hold the one to the other: the builder stage's go build (its arguments
// and environment) and the files it leaves, and the final stage's base,
// layer, user, entrypoint, working directory and labels. Its tests also
// build the final stage with buildah. How the two ways compare:
// docs/operators/image-and-chart.md.
package dockerfile

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Dockerfile is a parsed Dockerfile.
type Dockerfile struct {
	// Stages are its stages, in order.
	Stages []instructions.Stage
	// Warnings are what BuildKit's parser and linter said of it.
	Warnings []string
}

// Parse parses a Dockerfile as BuildKit does, its linter's rules on.
func Parse(r io.Reader) (*Dockerfile, error) {
	res, err := parser.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parsing the Dockerfile: %w", err)
	}
	d := &Dockerfile{}
	for _, w := range res.Warnings {
		d.Warnings = append(d.Warnings, fmt.Sprintf("line %d: %s", w.Location.Start.Line, w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		d.Warnings = append(d.Warnings, fmt.Sprintf("line %d: %s: %s", line, rule, msg))
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return nil, fmt.Errorf("reading the Dockerfile's instructions: %w", err)
	}
	if len(metaArgs) > 0 {
		return nil, errors.New("an ARG before the first FROM: not read here")
	}
	d.Stages = stages
	return d, nil
}

// Stage returns the stage named name.
func (d *Dockerfile) Stage(name string) (instructions.Stage, error) {
	for _, s := range d.Stages {
		if strings.EqualFold(s.Name, name) {
			return s, nil
		}
	}
	return instructions.Stage{}, fmt.Errorf("no stage %q", name)
}

// Final returns the last stage, the one a build without --target builds.
func (d *Dockerfile) Final() (instructions.Stage, error) {
	if len(d.Stages) == 0 {
		return instructions.Stage{}, errors.New("no stage")
	}
	return d.Stages[len(d.Stages)-1], nil
}

// BuildStages returns the final stage and the builder stage it copies
// from (its name is the builder's Name).
func (d *Dockerfile) BuildStages() (final, builder instructions.Stage, err error) {
	if final, err = d.Final(); err != nil {
		return final, builder, err
	}
	name, err := BuilderName(final)
	if err != nil {
		return final, builder, err
	}
	builder, err = d.Stage(name)
	return final, builder, err
}

// vars are the variables of a stage as a build sees them at one point:
// those its ARGs declare (the build argument, else the default) and those
// its ENVs set. Platform arguments (TARGETOS, ...) are build arguments
// here, given by the caller as a build gives them.
type vars map[string]string

// Get and Keys make vars the environment of BuildKit's shell lexer.
func (v vars) Get(key string) (string, bool) {
	val, ok := v[key]
	return val, ok
}

// Keys returns the names of v.
func (v vars) Keys() []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	return keys
}

// declare adds the variables cmd declares, if it is an ARG or an ENV.
func (v vars) declare(cmd instructions.Command, buildArgs map[string]string) error {
	switch c := cmd.(type) {
	case *instructions.ArgCommand:
		for _, a := range c.Args {
			if val, ok := buildArgs[a.Key]; ok {
				v[a.Key] = val
				continue
			}
			val, err := v.expand(a.ValueString())
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			v[a.Key] = val
		}
	case *instructions.EnvCommand:
		if err := c.Expand(v.expand); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		for _, kv := range c.Env {
			v[kv.Key] = kv.Value
		}
	}
	return nil
}

// expand expands the variables of one word as BuildKit does.
func (v vars) expand(word string) (string, error) {
	out, _, err := lexer.ProcessWord(word, v)
	return out, err
}
