package source

import (
	"errors"
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/archive"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// link is a link of a bundle or a commit, by name, and what it is ("a
// symbolic link", "a hard link", "a submodule (gitlink)").
type link struct {
	name, what string
}

// checkLinks refuses a link under dir ("" the root) of the source where:
// its target is not in the source (a
// link may point to /etc/passwd), so a render that needed it could not be
// made; no link is read, nor dropped in silence. It returns the names of
// the links elsewhere (Source.Links), which a render may not read either.
func checkLinks(where string, links []link, dir string) ([]string, error) {
	var elsewhere []string
	for _, l := range links {
		if dir != "" && l.name != dir && !strings.HasPrefix(l.name, dir+"/") {
			elsewhere = append(elsewhere, l.name)
			continue
		}
		return nil, failure.New(failure.ReasonLinkUnsupported, nil, "%s: %s is %s, which a source does not follow", where, l.name, l.what)
	}
	return elsewhere, nil
}

// checkChart is archive.CheckChart, its refusals with the reasons of
// sources: every chart goes through it, whatever its source.
func checkChart(where string, data []byte, limit int64) error {
	return archiveFailure(archive.CheckChart(where, data, limit))
}

// unbundle is archive.Unbundle, its files named for messages and its
// refusals with the reasons of sources.
func unbundle(where string, data []byte, limit int64) ([]File, []link, error) {
	files, links, err := archive.Unbundle(where, data, limit)
	if err != nil {
		return nil, nil, archiveFailure(err)
	}
	out := make([]File, len(files))
	for i, f := range files {
		out[i] = File{Name: f.Name, Where: where + " file " + f.Name, Data: f.Data}
	}
	ls := make([]link, len(links))
	for i, l := range links {
		ls[i] = link{name: l.Name, what: l.What}
	}
	return out, ls, nil
}

// archiveReasons are the reasons of an archive's refusals.
var archiveReasons = map[archive.Kind]string{
	archive.KindTooLarge:    sourcefailure.ReasonArtifactTooLarge,
	archive.KindUnsupported: sourcefailure.ReasonArtifactUnsupported,
	archive.KindLink:        failure.ReasonLinkUnsupported,
}

// archiveFailure is err, an *archive.Error, as a *failure.Error of its
// reason; nil for nil.
func archiveFailure(err error) error {
	if e, ok := errors.AsType[*archive.Error](err); ok {
		return failure.Quiet(archiveReasons[e.Kind], e, "%s", e.Message)
	}
	return err
}
