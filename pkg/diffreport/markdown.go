package diffreport

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// DefaultReportBytes is the default of --max-report-bytes: under the
	// 65,536 characters of a GitHub comment (a byte is at most a
	// character, so a report of that many bytes fits).
	DefaultReportBytes = 65000
	// MinReportBytes is the smallest report: the heading, a short table
	// and what was cut.
	MinReportBytes = 1024
	// shownChars bounds the revision and the URL in the heading.
	shownChars = 128
	// minCutContent is the least of a diff worth showing cut.
	minCutContent = 64
)

// Markdown is the report as a comment on a pull request: a heading with
// the revision, the summary, a table of the Releases shown, then one
// collapsed <details> per Release that changes or failed, its diff in a
// fenced block. When that is longer than limit bytes it is cut to fit:
// the table first (rows that do not fit are left out, and all details
// then), else the details in order (the first that does not fit is
// truncated at a line, the later ones are left out), and a closing
// paragraph names what was cut. Every fence and <details> opened is
// closed. limit must be at least MinReportBytes.
func (r *Report) Markdown(limit int) (string, error) {
	if limit < MinReportBytes {
		return "", fmt.Errorf("a Markdown report needs at least %d bytes, not %d", MinReportBytes, limit)
	}
	head, table, details := r.mdHead(), r.mdTable(), r.mdDetails()
	whole := head + strings.Join(table, "") + "\n"
	for _, d := range details {
		whole += d.render(d.content, "")
	}
	if len(whole) <= limit {
		return whole, nil
	}
	reserve := noticeBytes(limit)
	budget := limit - reserve
	var b strings.Builder
	b.WriteString(head)
	var cut cutList
	for i, row := range table {
		if b.Len()+len(row)+1 > budget {
			cut.rows = len(table) - max(i, 1) // the first line is the header
			break
		}
		b.WriteString(row)
	}
	b.WriteString("\n")
	for _, d := range details {
		switch {
		case cut.rows > 0 || cut.truncated != "" || len(cut.leftOut) > 0:
			cut.leftOut = append(cut.leftOut, d.name)
		case b.Len()+len(d.render(d.content, "")) <= budget:
			b.WriteString(d.render(d.content, ""))
		default:
			if s, ok := d.truncate(budget - b.Len()); ok {
				b.WriteString(s)
				cut.truncated = d.name
			} else {
				cut.leftOut = append(cut.leftOut, d.name)
			}
		}
	}
	b.WriteString(cut.notice(limit, reserve))
	return b.String(), nil
}

// noticeBytes is what a report of limit bytes keeps for saying what was
// cut.
func noticeBytes(limit int) int { return min(2048, limit/4) }

// mdHead is the heading and the summary.
func (r *Report) mdHead() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### kubectl convoy diff --revision %s\n\n", codeSpan(shorten(r.Revision, shownChars)))
	b.WriteString(r.SummaryLine())
	if r.SourceURL != "" {
		fmt.Fprintf(&b, ": the Releases of %s", codeSpan(shorten(r.SourceURL, shownChars)))
	}
	b.WriteString(".\n")
	if line := r.HiddenLine(); line != "" {
		b.WriteString("\n" + line + "\n")
	}
	if r.Summary.Releases == 0 {
		b.WriteString("\nNo Release was selected.\n")
	}
	return b.String()
}

// mdTable is the summary table, a line each: the header and the rows of
// Shown; none when no entry is shown.
func (r *Report) mdTable() []string {
	shown := r.Shown()
	if len(shown) == 0 {
		return nil
	}
	lines := []string{"\n| Release | Cluster | Result | Changed | Added | Pruned | Fields |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n"}
	for _, e := range shown {
		counts := "| | | | "
		if e.compared() {
			counts = fmt.Sprintf("| %d | %d | %d | %d ", e.Counts.Changed, e.Counts.Added, e.Counts.Pruned, e.Counts.Fields)
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s %s|\n", mdCell(e.Release.String()), mdCell(e.Release.Cluster), mdResult(e), counts))
	}
	return lines
}

// mdResult is the result cell of e: in bold when it asks for a look, with
// its reason.
func mdResult(e Entry) string {
	s := string(e.Result)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	s = mdCell(s)
	if e.Result == Changed || e.Result == Failed {
		s = "**" + s + "**"
	}
	return s
}

// detail is the collapsed block of one Release.
type detail struct {
	name, summary, lang, content string
}

// mdDetails are the blocks of the Releases shown that change or failed,
// in the order of the table.
func (r *Report) mdDetails() []detail {
	var out []detail
	for _, e := range r.Shown() {
		d := detail{name: e.Release.String(), content: e.Text, lang: "diff"}
		switch e.Result {
		case Changed:
			c := e.Counts
			d.summary = fmt.Sprintf("%s: %d changed, %d added, %d pruned, %d %s", d.name, c.Changed, c.Added, c.Pruned, c.Fields, plural(c.Fields, "field", "fields"))
			if e.Message != "" {
				d.content = e.Message + "\n\n" + d.content
			}
		case Failed:
			d.summary = fmt.Sprintf("%s: %s (%s)", d.name, e.Result, e.Reason)
			d.content, d.lang = e.Message, "text"
		default:
			continue
		}
		if !strings.HasSuffix(d.content, "\n") {
			d.content += "\n"
		}
		out = append(out, d)
	}
	return out
}

// render is the block of d with content in a fence longer than any run of
// backticks in d's whole content, and note after the fence.
func (d detail) render(content, note string) string {
	fence := strings.Repeat("`", max(3, longestRun(d.content, '`')+1))
	s := "<details><summary>" + html.EscapeString(d.summary) + "</summary>\n\n" + fence + d.lang + "\n" + content + fence + "\n\n"
	if note != "" {
		s += note + "\n\n"
	}
	return s + "</details>\n\n"
}

// truncate is the block of d with as many whole lines of its content as
// fit in room bytes (the first line cut between two characters if no
// line fits), saying how many; false when not even minCutContent bytes of
// content fit.
func (d detail) truncate(room int) (string, bool) {
	lines := strings.SplitAfter(d.content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := strconv.Itoa(len(lines))
	// The note's shown count has no more digits than the total.
	avail := room - len(d.render("", cutNote(total, total)))
	if avail < minCutContent {
		return "", false
	}
	var b strings.Builder
	n := 0
	for _, l := range lines {
		if b.Len()+len(l) > avail {
			break
		}
		b.WriteString(l)
		n++
	}
	if n == 0 {
		b.WriteString(cutString(lines[0], avail-1) + "\n")
	}
	return d.render(b.String(), cutNote(strconv.Itoa(n), total)), true
}

func cutNote(shown, total string) string {
	return "*Cut to fit: " + shown + " of " + total + " lines shown.*"
}

// cutList is what a cut report left out.
type cutList struct {
	// rows of the table left out (and with them every detail).
	rows int
	// truncated is the Release whose details were truncated.
	truncated string
	// leftOut are the Releases whose details were left out.
	leftOut []string
}

// notice says what was cut, in at most reserve bytes; nothing when nothing
// was.
func (c cutList) notice(limit, reserve int) string {
	if c.rows == 0 && c.truncated == "" && len(c.leftOut) == 0 {
		return ""
	}
	start := fmt.Sprintf("---\n\n**Cut to fit %d bytes.**", limit)
	end := " All of it: `-o table` or `-o json`.\n"
	var parts []string
	if c.rows > 0 {
		parts = append(parts, fmt.Sprintf(" Left out of the table: %d %s, and every Release's details.", c.rows, plural(c.rows, "Release", "Releases")))
	}
	room := reserve - len(start) - len(end) - len(strings.Join(parts, ""))
	if c.truncated != "" {
		const pre, post = " Truncated: the details of ", "."
		// Keep half the room for what was left out.
		names := nameList([]string{c.truncated}, min(room-len(pre)-len(post), room/2-len(pre)-len(post)))
		parts = append(parts, pre+names+post)
		room -= len(pre) + len(names) + len(post)
	}
	if len(c.leftOut) > 0 && c.rows == 0 {
		const pre, post = " Left out: the details of ", "."
		parts = append(parts, pre+nameList(c.leftOut, room-len(pre)-len(post))+post)
	}
	return start + strings.Join(parts, "") + end
}

// nameList lists names in at most room bytes, each as a code span: "a, b
// and 3 more", or "5 Releases" when not one fits.
func nameList(names []string, room int) string {
	all := fmt.Sprintf("%d %s", len(names), plural(len(names), "Release", "Releases"))
	var b strings.Builder
	for i, n := range names {
		sep := ", "
		if i == 0 {
			sep = ""
		}
		rest := ""
		if left := len(names) - i - 1; left > 0 {
			rest = fmt.Sprintf(" and %d more", left)
		}
		item := sep + codeSpan(n)
		if b.Len()+len(item)+len(rest) > room {
			if i == 0 {
				return all
			}
			fmt.Fprintf(&b, " and %d more", len(names)-i)
			return b.String()
		}
		b.WriteString(item)
	}
	return b.String()
}

// mdCell makes s one table cell: one line, no pipe or markup of its own.
func mdCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~#!&@", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// codeSpan writes s as inline code, in a run of backticks longer than any
// in s.
func codeSpan(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return ticks + s + ticks
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// shorten cuts s to n bytes, between two characters, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutString(s, n) + "…"
}

// cutString is the longest beginning of s of at most n bytes that does not
// end inside a character.
func cutString(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}
