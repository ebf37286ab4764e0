package config

// What the checks of other packages (configcheck) use to report a Problem
// against the file the configuration was read from.

// NewProblem is a Problem of c's file at line (1 when line is not positive).
func (c *Config) NewProblem(severity, rule string, line int, path, msg string) Problem {
	return c.problem(severity, rule, line, path, msg)
}

// Line is the line of a YAML path, or of its nearest ancestor present in
// the file. For a path inside a binding use BindingLine: tool ids hold dots.
func (c *Config) Line(path string) int { return c.line(path) }

// BindingLine is the line of the path sub (such as "lookup.url") inside
// bindings.ID, or of its nearest ancestor present in the file.
func (c *Config) BindingLine(id, sub string) int { return c.bindingLine(id, sub) }

// Sets reports whether the file sets a YAML path itself (rather than
// leaving it to its default).
func (c *Config) Sets(path string) bool {
	_, ok := c.lines[path]
	return ok
}

// SortProblems sorts problems by file and line, keeping the order of those
// on one line.
func SortProblems(ps []Problem) { sortProblems(ps) }
