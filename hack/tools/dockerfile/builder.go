package dockerfile

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// lexer splits and expands words as BuildKit does (the escape token \).
var lexer = shell.NewLex('\\')

// Build is one go build: the arguments after "go", and the variables set
// for it beyond the environment it runs in.
type Build struct {
	Args []string
	Env  map[string]string
}

// Builder is what a builder stage does for one target platform.
type Builder struct {
	// Base is the image of its FROM, Platform the FROM's --platform.
	Base, Platform string
	// WorkDir is its working directory; Sources are the targets of its
	// bind mounts of the build context, Caches those of its cache mounts.
	WorkDir         string
	Sources, Caches []string
	// Build is its go build, Output the file the build writes (-o).
	Build  Build
	Output string
	// Files are the modes of the files and directories its commands make
	// (fs.ModeDir for a directory), by absolute path.
	Files map[string]fs.FileMode
}

// umask is the umask of a RUN in BuildKit and buildah: go build writes its
// output 0755, mkdir makes 0755 what -m does not name.
const umask = 0o022

// assignment is a word that sets a variable for the command after it.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// ReadBuilder reads stage st as a build for platform (OS/ARCH) runs it,
// given the build arguments: its ARG, ENV, WORKDIR and RUN instructions.
// Each RUN is a shell form of commands joined by &&, each mkdir, chmod or
// go build, with the variables it sets before it: what a shell would do
// with more (a pipe, a redirection, a substitution) is not read here, and
// is an error. A stage's ARG must not be a Go variable (GO*, CGO_*): a RUN
// sees ARGs as environment variables, and go build would read it.
func ReadBuilder(st instructions.Stage, platform string, buildArgs map[string]string) (*Builder, error) {
	osName, arch, ok := strings.Cut(platform, "/")
	if !ok {
		return nil, fmt.Errorf("platform %q is not OS/ARCH", platform)
	}
	args := map[string]string{}
	maps.Copy(args, buildArgs)
	maps.Copy(args, map[string]string{"TARGETOS": osName, "TARGETARCH": arch, "TARGETPLATFORM": platform})
	b := &Builder{Base: st.BaseName, Platform: st.Platform, WorkDir: "/", Files: map[string]fs.FileMode{}}
	v, env := vars{}, map[string]string{}
	for _, cmd := range st.Commands {
		if err := v.declare(cmd, args); err != nil {
			return nil, err
		}
		switch c := cmd.(type) {
		case *instructions.ArgCommand:
			for _, a := range c.Args {
				if strings.HasPrefix(a.Key, "GO") || strings.HasPrefix(a.Key, "CGO_") {
					return nil, fmt.Errorf("%s: a RUN sees the ARG %s, and go build would read it", c, a.Key)
				}
			}
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env[kv.Key] = kv.Value
			}
		case *instructions.WorkdirCommand:
			wd, err := v.expand(c.Path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c, err)
			}
			b.WorkDir = resolve(b.WorkDir, wd)
		case *instructions.RunCommand:
			if err := b.run(c, v, env); err != nil {
				return nil, fmt.Errorf("%s: %w", c, err)
			}
		default:
			return nil, fmt.Errorf("%s: the builder stage's %s is not read here", cmd, cmd.Name())
		}
	}
	if b.Output == "" {
		return nil, errors.New("the builder stage runs no go build")
	}
	return b, nil
}

// run reads one RUN: its mounts and its commands.
func (b *Builder) run(c *instructions.RunCommand, v vars, env map[string]string) error {
	if !c.PrependShell || len(c.CmdLine) != 1 || len(c.Files) > 0 {
		return errors.New("not a shell form of one line")
	}
	if err := c.Expand(v.expand); err != nil {
		return err
	}
	for _, m := range instructions.GetMounts(c) {
		switch {
		case m.Type == instructions.MountTypeBind && m.From == "" && (m.Source == "" || m.Source == "."):
			b.Sources = append(b.Sources, b.abs(m.Target))
		case m.Type == instructions.MountTypeCache:
			b.Caches = append(b.Caches, b.abs(m.Target))
		default:
			return fmt.Errorf("a %s mount of %q: not read here", m.Type, m.Target)
		}
	}
	script := c.CmdLine[0]
	if strings.ContainsAny(script, ";|<>`") || strings.Contains(script, "$(") {
		return fmt.Errorf("%q is more shell than commands joined by &&", script)
	}
	words, err := lexer.ProcessWords(script, v)
	if err != nil {
		return err
	}
	for cmd := range splitWords(words, "&&") {
		set := maps.Clone(env)
		for len(cmd) > 0 && assignment.MatchString(cmd[0]) {
			k, val, _ := strings.Cut(cmd[0], "=")
			set[k] = val
			cmd = cmd[1:]
		}
		if len(cmd) == 0 {
			return errors.New("an empty command, or variables set for none")
		}
		if err := b.command(cmd, set); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(cmd, " "), err)
		}
	}
	return nil
}

// splitWords yields the runs of words between the words sep.
func splitWords(words []string, sep string) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(words) > 0 {
			i := slices.Index(words, sep)
			if i < 0 {
				i = len(words)
			}
			if !yield(words[:i]) {
				return
			}
			words = words[min(i+1, len(words)):]
		}
	}
}

// command reads one command with the variables set for it.
func (b *Builder) command(cmd []string, env map[string]string) error {
	switch cmd[0] {
	case "go":
		if len(cmd) < 2 || cmd[1] != "build" {
			return errors.New("go, but not go build")
		}
		if b.Output != "" {
			return errors.New("a second go build")
		}
		i := slices.Index(cmd, "-o")
		if i < 0 || i+1 >= len(cmd) {
			return errors.New("go build without -o")
		}
		b.Build = Build{Args: slices.Clone(cmd[1:]), Env: env}
		b.Output = b.abs(cmd[i+1])
		b.Files[b.Output] = 0o777 &^ umask
		return nil
	case "mkdir":
		return b.mkdir(cmd[1:])
	case "chmod":
		if len(cmd) < 3 {
			return errors.New("chmod needs a mode and a file")
		}
		mode, err := octal(cmd[1])
		if err != nil {
			return err
		}
		for _, p := range cmd[2:] {
			old, ok := b.Files[b.abs(p)]
			if !ok {
				return fmt.Errorf("chmod of %s, which no command before made", p)
			}
			b.Files[b.abs(p)] = old.Type() | mode
		}
		return nil
	}
	return fmt.Errorf("%s: not read here (mkdir, chmod and go build are)", cmd[0])
}

// mkdir reads mkdir's arguments: -p, -m MODE, directories.
func (b *Builder) mkdir(args []string) error {
	mode, parents := fs.FileMode(0o777&^umask), false
	var dirs []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-p":
			parents = true
		case "-m":
			if i+1 >= len(args) {
				return errors.New("-m without a mode")
			}
			m, err := octal(args[i+1])
			if err != nil {
				return err
			}
			mode, i = m, i+1
		default:
			if strings.HasPrefix(args[i], "-") {
				return fmt.Errorf("the flag %s is not read here", args[i])
			}
			dirs = append(dirs, b.abs(args[i]))
		}
	}
	for _, d := range dirs {
		if parents {
			for p := path.Dir(d); p != "/"; p = path.Dir(p) {
				if _, ok := b.Files[p]; !ok {
					b.Files[p] = fs.ModeDir | (0o777 &^ umask)
				}
			}
		}
		b.Files[d] = fs.ModeDir | mode
	}
	return nil
}

// abs is p from the working directory.
func (b *Builder) abs(p string) string {
	return resolve(b.WorkDir, p)
}

// resolve is the path p from the directory dir, as cd dir && cd p goes.
func resolve(dir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// octal parses an octal mode, the setuid, setgid and sticky bits included.
func octal(s string) (fs.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 12)
	if err != nil {
		return 0, fmt.Errorf("the mode %q is not octal: %w", s, err)
	}
	mode := fs.FileMode(n & 0o777)
	if n&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	if n&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if n&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	return mode, nil
}
