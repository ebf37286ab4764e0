package lint

import (
	"path/filepath"

	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/lockfile"
)

// Rule ids of pinned upstream definitions (TOOL/upstream.json, written by toolgate
// import and toolgate upstream accept).
const (
	RulePinInvalid         = "upstream-pin-invalid"
	RulePinChanged         = "upstream-pin-changed"
	RuleSensitiveUnchecked = "import-sensitive-unreviewed"
	RuleRulesUnchecked     = "import-rules-unreviewed"
)

// checkPins holds each tool's pin file to toolgate.lock and reports the review to-dos it
// still lists: what a person must add to a contract the import wrote.
func checkPins(reg *contract.Registry, dir string) []Finding {
	lock, err := lockfile.Read(dir)
	if err != nil {
		return nil // reported as lock-invalid
	}
	var out []Finding
	for _, t := range reg.Tools() {
		file := filepath.Join(t.Dir, lockfile.PinFileName)
		add := func(id, msg string) {
			out = append(out, Finding{ID: id, Severity: severityOf[id], Tool: t.ID, File: file, Message: msg})
		}
		p, err := lockfile.ReadPin(dir, t.ID)
		if err != nil {
			add(RulePinInvalid, err.Error())
			continue
		}
		if p == nil {
			continue
		}
		if _, err := lockfile.CheckPin(dir, t.ID, lock); err != nil {
			add(RulePinChanged, err.Error())
		}
		for _, todo := range p.Todo {
			switch todo {
			case lockfile.TodoSensitive:
				add(RuleSensitiveUnchecked, t.ID+" was imported: "+lockfile.PinTodos[todo]+"; then remove \""+todo+"\" from todo in "+lockfile.PinFileName)
			case lockfile.TodoRules:
				add(RuleRulesUnchecked, t.ID+" was imported: "+lockfile.PinTodos[todo]+"; then remove \""+todo+"\" from todo in "+lockfile.PinFileName)
			}
		}
	}
	return out
}
