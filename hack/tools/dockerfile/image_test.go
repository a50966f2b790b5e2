package dockerfile

import (
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestDiff: the config and the files are compared; times and contents
// only where both sides know them.
func TestDiff(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	base := Image{
		User: "65532:65532", Entrypoint: []string{"/server"}, WorkingDir: "/",
		Labels: map[string]string{"a": "1"},
		Layers: [][]File{{
			{Name: "server", Mode: 0o755, ModTime: at, Digest: "sha256:aa"},
			{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777, ModTime: at},
		}},
	}
	with := func(change func(*Image)) Image {
		img := base
		img.Labels = map[string]string{"a": "1"}
		img.Layers = [][]File{append([]File(nil), base.Layers[0]...)}
		change(&img)
		return img
	}
	for _, tc := range []struct {
		name string
		got  Image
		want []string
	}{
		{"the same", with(func(*Image) {}), nil},
		{"no times nor contents known", with(func(img *Image) {
			img.Layers[0][0].ModTime, img.Layers[0][0].Digest = time.Time{}, ""
		}), nil},
		{"env and created are not compared", with(func(img *Image) {
			img.Env, img.Created = []string{"PATH=/bin"}, at
		}), nil},
		{"the user", with(func(img *Image) { img.User = "0" }), []string{"user: want 65532:65532, got 0"}},
		{"a command", with(func(img *Image) { img.Cmd = []string{"--help"} }), []string{"cmd: want [], got [--help]"}},
		{"a label", with(func(img *Image) { img.Labels = map[string]string{"b": "1"} }),
			[]string{`label a: want "1", got (none)`, `label b: want (none), got "1"`}},
		{"a mode", with(func(img *Image) { img.Layers[0][1].Mode = fs.ModeDir | 0o755 }),
			[]string{"layer 1: /tmp: mode: want dtrwxrwxrwx, got drwxr-xr-x"}},
		{"an owner", with(func(img *Image) { img.Layers[0][0].UID = 65532 }),
			[]string{"layer 1: /server: owner: want 0:0, got 65532:0"}},
		{"a time", with(func(img *Image) { img.Layers[0][0].ModTime = at.Add(time.Second) }),
			[]string{"layer 1: /server: time: want 2026-03-04 05:06:07 +0000 UTC, got 2026-03-04 05:06:08 +0000 UTC"}},
		{"a content", with(func(img *Image) { img.Layers[0][0].Digest = "sha256:bb" }),
			[]string{"layer 1: /server: content: want sha256:aa, got sha256:bb"}},
		{"a file more and one less", with(func(img *Image) { img.Layers[0][1].Name = "var/tmp" }),
			[]string{"layer 1: /tmp: want dtrwxrwxrwx, missing", "layer 1: /var/tmp: not wanted, got dtrwxrwxrwx"}},
		{"another layer", with(func(img *Image) { img.Layers = append(img.Layers, nil) }), []string{"layers: want 1, got 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Diff(base, tc.got))
		})
	}
}
