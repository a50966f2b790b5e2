package dockerfile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// Excluded returns those of files (paths from root, with /) that the
// .dockerignore at root leaves out of the build context, read as BuildKit
// reads it.
func Excluded(root string, files []string) ([]string, error) {
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf(".dockerignore: %w", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf(".dockerignore: %w", err)
	}
	var out []string
	for _, file := range files {
		excluded, err := pm.MatchesOrParentMatches(file)
		if err != nil {
			return nil, err
		}
		if excluded {
			out = append(out, file)
		}
	}
	return out, nil
}

// listTemplate prints, for each package of the main module, the files go
// build reads: one a line, from the module's root.
const listTemplate = `{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}` +
	`{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .SFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .HFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .SysoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}`

// BuildFiles returns the files of the module at root that go build of pkg
// reads for platform (OS/ARCH) with CGO_ENABLED=0, paths from root with /:
// go.mod, go.sum and the files of its packages.
func BuildFiles(ctx context.Context, root, pkg, platform string) ([]string, error) {
	osName, arch, _ := strings.Cut(platform, "/")
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f", listTemplate, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+osName, "GOARCH="+arch, "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	files := []string{"go.mod", "go.sum"}
	for line := range strings.Lines(string(out)) {
		rel, err := filepath.Rel(abs, strings.TrimSpace(line))
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}
