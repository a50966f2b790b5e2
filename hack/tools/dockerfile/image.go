package dockerfile

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// Image is what is compared of an image: its config and its layers' files.
type Image struct {
	User       string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Labels     map[string]string
	// Env is the config's environment, Created its time (zero where not
	// known); neither is compared by Diff.
	Env     []string
	Created time.Time
	// Layers are the files of each layer, by name.
	Layers [][]File
}

// File is one entry of a layer.
type File struct {
	// Name is the path in the image, without a leading / or ./ and without
	// a trailing /.
	Name string
	// Mode holds the type (fs.ModeDir for a directory) and the permission,
	// setuid, setgid and sticky bits.
	Mode     fs.FileMode
	UID, GID int
	// ModTime and Digest (of the content, sha256:HEX) are compared where
	// both sides know them: a Dockerfile's prediction knows neither.
	ModTime time.Time
	Digest  string
}

// Diff lists what differs between want and got, one line each.
func Diff(want, got Image) []string {
	var diffs []string
	add := func(what string, w, g any) {
		diffs = append(diffs, fmt.Sprintf("%s: want %v, got %v", what, w, g))
	}
	if want.User != got.User {
		add("user", want.User, got.User)
	}
	if !slices.Equal(want.Entrypoint, got.Entrypoint) {
		add("entrypoint", want.Entrypoint, got.Entrypoint)
	}
	if !slices.Equal(want.Cmd, got.Cmd) {
		add("cmd", want.Cmd, got.Cmd)
	}
	if want.WorkingDir != got.WorkingDir {
		add("working directory", want.WorkingDir, got.WorkingDir)
	}
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(want.Labels, got.Labels))) {
		w, inW := want.Labels[k]
		g, inG := got.Labels[k]
		if w != g || inW != inG {
			add("label "+k, quoteIf(w, inW), quoteIf(g, inG))
		}
	}
	if len(want.Layers) != len(got.Layers) {
		add("layers", len(want.Layers), len(got.Layers))
		return diffs
	}
	for i := range want.Layers {
		diffs = append(diffs, diffFiles(fmt.Sprintf("layer %d: ", i+1), want.Layers[i], got.Layers[i])...)
	}
	return diffs
}

// diffFiles lists what differs between two layers' files.
func diffFiles(prefix string, want, got []File) []string {
	byName := func(files []File) map[string]File {
		m := map[string]File{}
		for _, f := range files {
			m[f.Name] = f
		}
		return m
	}
	w, g := byName(want), byName(got)
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(mergeKeys(w, g))) {
		wf, inW := w[name]
		gf, inG := g[name]
		switch {
		case !inW:
			diffs = append(diffs, fmt.Sprintf("%s/%s: not wanted, got %v", prefix, name, gf.Mode))
		case !inG:
			diffs = append(diffs, fmt.Sprintf("%s/%s: want %v, missing", prefix, name, wf.Mode))
		default:
			diffs = append(diffs, diffFile(prefix+"/"+name, wf, gf)...)
		}
	}
	return diffs
}

// diffFile lists what differs between two entries of one name.
func diffFile(what string, w, g File) []string {
	var diffs []string
	if w.Mode != g.Mode {
		diffs = append(diffs, fmt.Sprintf("%s: mode: want %v, got %v", what, w.Mode, g.Mode))
	}
	if w.UID != g.UID || w.GID != g.GID {
		diffs = append(diffs, fmt.Sprintf("%s: owner: want %d:%d, got %d:%d", what, w.UID, w.GID, g.UID, g.GID))
	}
	if !w.ModTime.IsZero() && !g.ModTime.IsZero() && !w.ModTime.Equal(g.ModTime) {
		diffs = append(diffs, fmt.Sprintf("%s: time: want %s, got %s", what, w.ModTime.UTC(), g.ModTime.UTC()))
	}
	if w.Digest != "" && g.Digest != "" && w.Digest != g.Digest {
		diffs = append(diffs, fmt.Sprintf("%s: content: want %s, got %s", what, w.Digest, g.Digest))
	}
	return diffs
}

// mergeKeys is the set of the keys of a and b.
func mergeKeys[V any](a, b map[string]V) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// quoteIf quotes s where present, and says it is absent otherwise.
func quoteIf(s string, present bool) string {
	if !present {
		return "(none)"
	}
	return fmt.Sprintf("%q", s)
}

// Predict is the image the final stage st builds on the builder b's files,
// given the build arguments. The stage must be FROM scratch (a base's
// layers and config would be in the image), and may hold ARG, COPY (from
// b's stage, named builder, each a layer), USER, WORKDIR, ENTRYPOINT and
// CMD in their exec form, and LABEL: another instruction is an error. The
// files copied are owned by root, with the modes the builder gave them.
func Predict(st instructions.Stage, builder string, b *Builder, buildArgs map[string]string) (Image, error) {
	if st.BaseName != "scratch" {
		return Image{}, fmt.Errorf("the final stage is FROM %s, not scratch", st.BaseName)
	}
	img := Image{WorkingDir: "/", Labels: map[string]string{}}
	v := vars{}
	for _, cmd := range st.Commands {
		if err := v.declare(cmd, buildArgs); err != nil {
			return Image{}, err
		}
		if err := img.apply(cmd, v, builder, b); err != nil {
			return Image{}, fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return img, nil
}

// apply changes img as one instruction of the final stage does.
func (img *Image) apply(cmd instructions.Command, v vars, builder string, b *Builder) error {
	if e, ok := cmd.(instructions.SupportsSingleWordExpansion); ok {
		if err := e.Expand(v.expand); err != nil {
			return err
		}
	}
	switch c := cmd.(type) {
	case *instructions.ArgCommand:
	case *instructions.CopyCommand:
		layer, err := copyLayer(c, builder, b)
		if err != nil {
			return err
		}
		img.Layers = append(img.Layers, layer)
	case *instructions.UserCommand:
		img.User = c.User
	case *instructions.WorkdirCommand:
		img.WorkingDir = resolve(img.WorkingDir, c.Path)
	case *instructions.EntrypointCommand:
		if c.PrependShell {
			return fmt.Errorf("a shell form: there is no shell in the image")
		}
		img.Entrypoint = c.CmdLine
	case *instructions.CmdCommand:
		if c.PrependShell {
			return fmt.Errorf("a shell form: there is no shell in the image")
		}
		img.Cmd = c.CmdLine
	case *instructions.LabelCommand:
		for _, kv := range c.Labels {
			img.Labels[kv.Key] = kv.Value
		}
	default:
		return fmt.Errorf("%s in the final stage is not read here", cmd.Name())
	}
	return nil
}

// copyLayer is the layer of one COPY of a directory's content from the
// builder to /: the builder's files under it, owned by root.
func copyLayer(c *instructions.CopyCommand, builder string, b *Builder) ([]File, error) {
	if !strings.EqualFold(c.From, builder) {
		return nil, fmt.Errorf("a COPY from %q, not from the builder stage %q", c.From, builder)
	}
	if c.Chown != "" || c.Chmod != "" || len(c.ExcludePatterns) > 0 || c.Parents || len(c.SourceContents) > 0 {
		return nil, fmt.Errorf("a COPY with --chown, --chmod, --exclude, --parents or a here-document: not read here")
	}
	if len(c.SourcePaths) != 1 || !strings.HasSuffix(c.SourcePaths[0], "/") || c.DestPath != "/" {
		return nil, fmt.Errorf("not a COPY of one directory's content to /")
	}
	src := path.Clean(c.SourcePaths[0])
	var layer []File
	for p, mode := range b.Files {
		if rel, ok := strings.CutPrefix(p, src+"/"); ok {
			layer = append(layer, File{Name: rel, Mode: mode})
		}
	}
	slices.SortFunc(layer, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return layer, nil
}
