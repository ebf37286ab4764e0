package contract

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/strictyaml"
)

// Agent is agents/<name>.yaml: an agent's system prompt, for contract cases played by a
// model (toolgate test --model-url).
type Agent struct {
	Name         string `yaml:"name"` // defaults to the file name
	Description  string `yaml:"description"`
	SystemPrompt string `yaml:"system_prompt"`
	File         string `yaml:"-"`
}

// Decision is a rule record, decisions/<id>.yaml (docs/reference/files.md). The loader reads it strictly
// (unknown fields, missing required fields, a bad date or pointer, a supersedes naming no
// record are errors: contract/decisions.go); what records rely on is lint's and gate's to
// judge.
type Decision struct {
	ID            string     `yaml:"id"`
	Decision      string     `yaml:"decision"`
	Context       string     `yaml:"context"`
	Alternatives  []string   `yaml:"alternatives"`
	Owner         string     `yaml:"owner"`
	ReviewTrigger string     `yaml:"review_trigger"`
	Date          string     `yaml:"date"`
	PolicyVersion string     `yaml:"policy_version"`
	Tool          string     `yaml:"tool"`
	ReliesOn      []ReliesOn `yaml:"relies_on"`
	Supersedes    string     `yaml:"supersedes"`
	File          string     `yaml:"-"`
	// Raw is the file's bytes, as toolgate.lock digests them.
	Raw []byte `yaml:"-"`
	// SupersededBy is the id of the record that supersedes this one; "" for a
	// live record.
	SupersededBy string         `yaml:"-"`
	lines        map[string]int // YAML path -> line
}

// Line is the line of a YAML path ("relies_on[1].value") in the record's file, or of
// its nearest ancestor; 0 when unknown.
func (d *Decision) Line(path string) int {
	if d.lines == nil {
		return 0
	}
	return strictyaml.LineOf(d.lines, path)
}

// ReliesOn is one field (and optionally one enum value) a rule record relies on.
type ReliesOn struct {
	Pointer string `yaml:"pointer"`
	Value   any    `yaml:"value"`
}

// approvalFile is approvals/<name>.yaml; package gate reads its meaning, the loader its
// fields.
type approvalFile struct {
	Approver   string    `yaml:"approver"`
	Tool       string    `yaml:"tool"`
	Version    string    `yaml:"version"`
	ApprovedAt time.Time `yaml:"approved_at"`
	Note       string    `yaml:"note"`
}

// Agents returns the agents of agents/*.yaml, sorted by name.
func (r *Registry) Agents() []*Agent { return r.agents }

// AgentPrompts maps each agent's name to its system prompt.
func (r *Registry) AgentPrompts() map[string]string {
	out := map[string]string{}
	for _, a := range r.agents {
		out[a.Name] = a.SystemPrompt
	}
	return out
}

// Decisions returns the rule records of decisions/*.yaml, sorted by file.
func (r *Registry) Decisions() []*Decision { return r.decisions }

// yamlFiles lists the *.yaml and *.yml files of a folder; nil when it does not exist.
func (l *loader) yamlFiles(dir string) []string {
	entries, err := l.readDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") && (ext == ".yaml" || ext == ".yml") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// loadShared reads the folders of a tools directory that are not tools: agents/,
// approvals/ and decisions/.
func (l *loader) loadShared(reg *Registry) {
	for _, path := range l.yamlFiles(filepath.Join(reg.Dir, "agents")) {
		y := &yamlFile{l: l, path: path}
		a := &Agent{File: path}
		if _, ok := y.decode(a); !ok {
			continue
		}
		if a.Name == "" {
			a.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		reg.agents = append(reg.agents, a)
	}
	sort.Slice(reg.agents, func(i, j int) bool { return reg.agents[i].Name < reg.agents[j].Name })
	for _, path := range l.yamlFiles(filepath.Join(reg.Dir, "approvals")) {
		y := &yamlFile{l: l, path: path}
		var a approvalFile
		if exists, ok := y.decode(&a); !exists || !ok {
			continue
		}
		if a.Tool != "" && reg.Tool(a.Tool) == nil {
			y.bad("tool", "%s", reg.ToolNotFoundDetail(a.Tool))
		}
	}
	for _, path := range l.yamlFiles(filepath.Join(reg.Dir, "decisions")) {
		l.loadDecision(reg, path)
	}
	l.linkDecisions(reg)
}
