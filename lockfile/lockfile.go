// Package lockfile keeps released tool versions immutable (docs/reference/files.md, toolgate.lock): the lock
// records the SHA-256 digest of every released schema file, and Check reports a locked
// file that was changed in place or removed.
//
// A version is released unless its schema file sets the top-level extension
// "x-draft": true. Locking is additive: a version once locked stays in the lock even when
// its file is deleted, so the release gate can see a dropped version and check its
// deprecation window.
package lockfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/contract"
)

// FileName is the lock's file name at the root of a tools directory.
const FileName = "toolgate.lock"

// FormatVersion is the value of a lock's "lock_version" field.
const FormatVersion = 1

// Lock is the content of toolgate.lock.
type Lock struct {
	LockVersion int     `json:"lock_version"`
	Versions    []Entry `json:"versions"` // sorted by tool, then semver
	// Decisions pins the rule records (decisions/<id>.yaml, docs/reference/files.md): a
	// locked record is never edited, a new record supersedes it. Sorted by id.
	Decisions []DecisionEntry `json:"decisions,omitempty"`
	// Pins are the upstream definitions tools were imported from or last
	// accepted from (TOOL/upstream.json): toolgate serve stops a tool whose
	// live upstream definition drifted from its pin. Sorted by tool.
	Pins []PinEntry `json:"upstream_pins,omitempty"`
}

// Entry is one released version.
type Entry struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	// File is the schema file's path relative to the tools directory, with forward slashes.
	File string `json:"file"`
	// Digest is "sha256:<hex>" of the file's bytes exactly as on disk.
	Digest   string    `json:"digest"`
	LockedAt time.Time `json:"locked_at"`
	// DeprecatedAt is when `toolgate lock` first saw the version matched by the tool's
	// deprecated_versions; the release gate measures the deprecation window from it.
	DeprecatedAt *time.Time `json:"deprecated_at,omitempty"`
	// Held, when set, says why the version is released but not the tool's
	// default: it would have become the default (the newest released version)
	// without what the release gate's approval rule asks of that promotion.
	// A gateway never makes a held version its default by itself; a promote
	// (with the approval) or a later `toolgate lock` that finds the approval
	// lifts the hold.
	Held string `json:"held,omitempty"`
	// Replaces is the version that was the tool's released default when this
	// one became it: what a rollback restores at a gateway whose rollout
	// record does not say otherwise.
	Replaces string `json:"replaces,omitempty"`
}

// Find returns the entry of tool@version, or nil.
func (l *Lock) Find(tool, version string) *Entry {
	if l == nil {
		return nil
	}
	version = strings.TrimPrefix(version, "v")
	for i := range l.Versions {
		if l.Versions[i].Tool == tool && l.Versions[i].Version == version {
			return &l.Versions[i]
		}
	}
	return nil
}

// Digest returns "sha256:<hex>" of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Parse decodes a lock file. Unknown fields are refused so a typo cannot hide an entry.
func Parse(data []byte) (*Lock, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("parse %s: %w", FileName, err)
	}
	if l.LockVersion != FormatVersion {
		return nil, fmt.Errorf("parse %s: lock_version %d is not %d", FileName, l.LockVersion, FormatVersion)
	}
	for i, e := range l.Versions {
		if e.Tool == "" || e.Version == "" || e.File == "" || !strings.HasPrefix(e.Digest, "sha256:") {
			return nil, fmt.Errorf("parse %s: entry %d needs tool, version, file and a sha256: digest", FileName, i)
		}
	}
	if err := l.checkDecisionEntries(); err != nil {
		return nil, err
	}
	if err := l.checkPinEntries(); err != nil {
		return nil, err
	}
	return &l, nil
}

// Marshal encodes the lock as indented JSON with a trailing newline; equal locks give equal bytes.
func (l *Lock) Marshal() []byte {
	b, _ := json.MarshalIndent(l, "", "  ")
	return append(b, '\n')
}

// Read reads dir/toolgate.lock; it returns (nil, nil) when the directory has no lock.
func Read(dir string) (*Lock, error) {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// IsDraft reports whether a schema file marks itself unreleased ("x-draft": true).
func IsDraft(raw []byte) bool {
	var probe struct {
		Draft bool `json:"x-draft"`
	}
	_ = json.Unmarshal(raw, &probe)
	return probe.Draft
}

// BuildOptions tune Build.
type BuildOptions struct {
	// Now stamps new entries and new deprecations. Defaults to time.Now().UTC().
	Now func() time.Time
	// Force re-digests locked versions whose file changed in place instead of refusing.
	Force bool
}

// Build locks every released version of reg on top of prev (nil for a first lock). Entries of
// prev keep their locked_at; entries whose file is gone are kept. A locked version whose
// file changed is refused with a *ChangedError unless opts.Force is set.
func Build(reg *contract.Registry, prev *Lock, opts BuildOptions) (*Lock, error) {
	now := time.Now().UTC()
	if opts.Now != nil {
		now = opts.Now().UTC()
	}
	now = now.Truncate(time.Second)
	out := &Lock{LockVersion: FormatVersion}
	seen := map[string]bool{}
	var changed []Violation
	for _, t := range reg.Tools() {
		for _, v := range t.Versions {
			if IsDraft(v.Raw) {
				continue
			}
			rel, err := filepath.Rel(reg.Dir, v.File)
			if err != nil {
				rel = v.File
			}
			e := Entry{Tool: t.ID, Version: v.Version, File: filepath.ToSlash(rel), Digest: Digest(v.Raw), LockedAt: now}
			if old := prev.Find(t.ID, v.Version); old != nil {
				if old.Digest != e.Digest && !opts.Force {
					changed = append(changed, Violation{Kind: Changed, Entry: *old, Got: e.Digest})
				}
				e.LockedAt, e.DeprecatedAt, e.Held, e.Replaces = old.LockedAt, old.DeprecatedAt, old.Held, old.Replaces
			}
			if e.DeprecatedAt == nil && t.Policy.Deprecates(v.Version) {
				d := now
				e.DeprecatedAt = &d
			}
			seen[t.ID+"@"+v.Version] = true
			out.Versions = append(out.Versions, e)
		}
	}
	if prev != nil {
		for _, e := range prev.Versions {
			if !seen[e.Tool+"@"+e.Version] {
				out.Versions = append(out.Versions, e)
			}
		}
	}
	out.Decisions, changed = buildDecisions(reg, prev, opts.Force, now, changed)
	ids := make([]string, 0, len(reg.Tools()))
	for _, t := range reg.Tools() {
		ids = append(ids, t.ID)
	}
	out.Pins, changed = buildPins(reg.Dir, ids, prev, opts.Force, now, changed)
	if len(changed) > 0 {
		return nil, &ChangedError{Violations: changed}
	}
	sortEntries(out.Versions)
	return out, nil
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Tool != es[j].Tool {
			return es[i].Tool < es[j].Tool
		}
		a, _ := contract.ParseSemver(es[i].Version)
		b, _ := contract.ParseSemver(es[j].Version)
		return a.Compare(b) < 0
	})
}

// ChangedError refuses to re-lock released versions whose files changed in place.
type ChangedError struct{ Violations []Violation }

func (e *ChangedError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// Violation kinds.
const (
	Changed = "changed" // the file's bytes differ from the locked digest
	Removed = "removed" // the file is gone: the version is being dropped
)

// Violation is a locked version whose file no longer matches the lock.
type Violation struct {
	Kind  string
	Entry Entry
	Got   string // the digest on disk ("" when removed)
	// Record is set (and Entry empty) when the violation is of a locked rule
	// record rather than a released version: Build reports both kinds,
	// Check only versions, CheckDecisions only records.
	Record *DecisionEntry
	// Pin is set when the violation is of a pinned upstream definition
	// (Entry.Tool and Entry.File name it) edited by hand.
	Pin bool
}

func (v Violation) String() string {
	if v.Record != nil {
		return v.recordString()
	}
	if v.Pin {
		return fmt.Sprintf("pinned upstream definition of %s was edited in place: %s is %s, locked as %s (accept a new definition with toolgate upstream accept --tool %s)",
			v.Entry.Tool, v.Entry.File, short(v.Got), short(v.Entry.Digest), v.Entry.Tool)
	}
	if v.Kind == Removed {
		return fmt.Sprintf("released version %s %s was removed (%s)", v.Entry.Tool, v.Entry.Version, v.Entry.File)
	}
	return fmt.Sprintf("released version %s %s changed in place: %s is %s, locked as %s",
		v.Entry.Tool, v.Entry.Version, v.Entry.File, short(v.Got), short(v.Entry.Digest))
}

func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// Check compares every locked file under dir with its digest. Violations come in lock order.
func Check(dir string, l *Lock) []Violation {
	if l == nil {
		return nil
	}
	var out []Violation
	for _, e := range l.Versions {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, Violation{Kind: Removed, Entry: e})
		case err != nil:
			out = append(out, Violation{Kind: Changed, Entry: e, Got: "unreadable"})
		case Digest(data) != e.Digest:
			out = append(out, Violation{Kind: Changed, Entry: e, Got: Digest(data)})
		}
	}
	return out
}
