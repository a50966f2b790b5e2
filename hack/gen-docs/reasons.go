package main

import (
	"strings"

	"github.com/kumodo/convoy-apiserver/internal/docscheck"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonsPage returns reasons.md: an index of reasons, then a section for
// each, whose heading is its name (reasons.md#sourcenotfound).
func ReasonsPage(reasons []failure.Reason) string {
	b := page("Reasons",
		"Every reason convoy-apiserver gives: in the conditions of a Release (InSync, Healthy), the answers of its subresources, its Events, the Ready condition of a Receiver (Receiver), and the refusal metrics.",
		"A refusal is convoy-apiserver declining an input (a policy, a limit), rather than something it depends on failing; the refusal metrics count it by reason.")

	rows := make([][]string, 0, len(reasons))
	for _, r := range reasons {
		rows = append(rows, []string{"[" + r.Name + "](#" + docscheck.Slug(r.Name) + ")", string(r.Class), shows(r), yesNo(r.Refusal), declaredIn(r)})
	}
	table(b, []string{"reason", "class", "shows in", "refusal", "declared in"}, rows)

	for _, r := range reasons {
		b.WriteString("## " + r.Name + "\n\n")
		b.WriteString("Class " + string(r.Class) + "; shows in " + shows(r) + "; declared in " + declaredIn(r) + "; ")
		if r.Refusal {
			b.WriteString("a refusal.\n\n")
		} else {
			b.WriteString("not a refusal.\n\n")
		}
		b.WriteString("**What it means:** " + cell(sentence(r.Means)) + "\n\n")
		b.WriteString("**What to do:** " + cell(sentence(r.Action)) + "\n\n")
	}
	return b.String()
}

// declaredIn is the package that declares r, relative to the module.
func declaredIn(r failure.Reason) string {
	return "`" + strings.TrimPrefix(r.Package, "github.com/kumodo/convoy-apiserver/") + "`"
}

// shows lists where r shows.
func shows(r failure.Reason) string {
	out := make([]string, len(r.Shows))
	for i, w := range r.Shows {
		out[i] = string(w)
	}
	return strings.Join(out, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// sentence is s on one line, ending with a full stop.
func sentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
