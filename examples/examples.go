// Package examples embeds the bundled example tools directory, so that
// `toolgate demo` and a `toolgate serve` without configuration work from the
// binary alone.
package examples

import (
	"embed"
	"io/fs"
)

//go:embed agent-tools
var files embed.FS

// AgentTools returns the bundled tools directory (docs/reference/files.md) as a file system
// whose root holds one folder per tool.
func AgentTools() fs.FS {
	sub, err := fs.Sub(files, "agent-tools")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
