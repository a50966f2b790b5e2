package dockerfile

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// CacheVars are the variables that say where go build keeps its caches, not
// how it builds: a Dockerfile sets them to its cache mounts.
var CacheVars = []string{"GOCACHE", "GOMODCACHE"}

// Compare lists how the Dockerfile's build for platform (OS/ARCH), given the
// build arguments, differs from make image's, one line each: its builder's
// go build (the arguments, but for the directory of -o; the variables, but
// for CacheVars, which must be cache mounts), and the image its final stage
// makes of the builder's files (the config and the files, but for their
// times and content).
func Compare(df *Dockerfile, platform string, buildArgs map[string]string, made *MakeImage) []string {
	want, ok := made.Builds[platform]
	if !ok {
		return []string{"make image built no " + platform}
	}
	final, st, err := df.BuildStages()
	if err != nil {
		return []string{err.Error()}
	}
	b, err := ReadBuilder(st, platform, buildArgs)
	if err != nil {
		return []string{err.Error()}
	}
	diffs := DiffBuild(want, b.Build)
	if !slices.Contains(b.Sources, b.WorkDir) {
		diffs = append(diffs, fmt.Sprintf("the go build runs in %s, where no bind mount of the build context is", b.WorkDir))
	}
	for _, v := range CacheVars {
		if dir, ok := b.Build.Env[v]; !ok || !slices.Contains(b.Caches, resolve(b.WorkDir, dir)) {
			diffs = append(diffs, fmt.Sprintf("%s=%s: not a cache mount of the go build's RUN", v, dir))
		}
	}
	img, err := Predict(final, st.Name, b, buildArgs)
	if err != nil {
		return append(diffs, err.Error())
	}
	return append(diffs, Diff(made.Images[platform], img)...)
}

// BuilderName is the stage the final stage copies from.
func BuilderName(final instructions.Stage) (string, error) {
	for _, cmd := range final.Commands {
		if c, ok := cmd.(*instructions.CopyCommand); ok && c.From != "" {
			return c.From, nil
		}
	}
	return "", errors.New("the final stage copies from no stage")
}

// DiffBuild lists what differs between two go builds: their arguments, the
// directory of -o aside, and their variables, CacheVars aside.
func DiffBuild(want, got Build) []string {
	var diffs []string
	if w, g := outputBase(want.Args), outputBase(got.Args); !slices.Equal(w, g) {
		diffs = append(diffs, fmt.Sprintf("go %q: want go %q", g, w))
	}
	w, g := maps.Clone(want.Env), maps.Clone(got.Env)
	for _, v := range CacheVars {
		delete(w, v)
		delete(g, v)
	}
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(w, g))) {
		wv, inW := w[k]
		gv, inG := g[k]
		if wv != gv || inW != inG {
			diffs = append(diffs, fmt.Sprintf("go build's %s: want %s, got %s", k, quoteIf(wv, inW), quoteIf(gv, inG)))
		}
	}
	return diffs
}

// outputBase is args with the value of -o made its base name.
func outputBase(args []string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, "-o"); i >= 0 && i+1 < len(out) {
		out[i+1] = path.Base(out[i+1])
	}
	return out
}
