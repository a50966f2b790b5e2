package view

import (
	"embed"
	"html/template"
)

// assets are served under /static/: the style sheet and the icon. The pages
// carry no script.
//
//go:embed static
var assets embed.FS

//go:embed templates/*.html
var templateFS embed.FS

// templates are the pages, parsed once; html/template escapes everything
// that comes from the cluster.
var templates = template.Must(template.New("").ParseFS(templateFS, "templates/*.html"))

// layout is what the frame of every page needs: its title, and Base, the
// prefix of every path of the view (BasePath), which its links carry.
type layout struct {
	Title string
	Base  string
}
