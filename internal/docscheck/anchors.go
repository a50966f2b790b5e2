// Package docscheck checks the Markdown of the repository (docs_test.go):
// every code fence closes, no link leaves the repository, a relative link
// names a file that exists and a #fragment a heading or anchor of it. This
// file computes the anchors of a page as GitHub does.
package docscheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

var (
	// atxHeading is a heading line: up to three spaces, one to six #, then
	// the text and an optional closing run of #.
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// explicitAnchor is an HTML anchor: <a id="x"> or <a name="x">.
	explicitAnchor = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)\s*=\s*["']([^"']+)["']`)
	// inlineLink and image are [text](target) and ![alt](target): the
	// heading's text keeps text and alt.
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// htmlTag is any HTML tag, which the rendered text leaves out.
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// Slug returns the anchor GitHub gives a heading whose Markdown text is
// heading: the rendered text (links and images by their text, no HTML
// tags), lowercase, each space a hyphen, and every character dropped but
// letters, digits, hyphens and underscores. Duplicates are for Anchors.
func Slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors returns the anchors of a Markdown page: the slug of each heading
// outside code fences, the second of a slug with -1, the third with -2 and
// so on, and the explicit <a id> and <a name> anchors.
func Anchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		if f := fenceOf(trimmed); f != "" && (fence == "" || strings.HasPrefix(trimmed, fence)) {
			if fence == "" {
				fence = f
			} else {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for _, m := range explicitAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		n := seen[slug]
		seen[slug] = n + 1
		if n > 0 {
			slug = fmt.Sprintf("%s-%d", slug, n)
		}
		anchors[slug] = true
	}
	return anchors
}

// fenceOf returns the fence a line opens or closes (``` or ~~~), or "".
func fenceOf(trimmed string) string {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(trimmed, f) {
			return f
		}
	}
	return ""
}
