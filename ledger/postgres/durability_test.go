package postgres

import (
	"strings"
	"testing"
)

func TestJudgeDurability(t *testing.T) {
	t.Parallel()
	safe := map[string]string{"fsync": "on", "synchronous_commit": "on", "synchronous_standby_names": "FIRST 1 (s1)", "full_page_writes": "on"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range safe {
			m[a] = b
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name          string
		set           map[string]string
		sync, senders int
		visible       bool
		replicated    bool
		warnings      []string // substrings, in order
	}{
		{name: "synchronous standby connected", set: safe, sync: 1, senders: 1, visible: true, replicated: true},
		{name: "sync state not visible", set: safe, sync: 0, senders: 1, visible: false, replicated: true},
		{name: "synchronous standby not connected", set: safe, visible: true, replicated: true, warnings: []string{"no synchronous standby is connected"}},
		{name: "remote_apply", set: with("synchronous_commit", "remote_apply"), sync: 1, senders: 1, visible: true, replicated: true},
		{name: "remote_write", set: with("synchronous_commit", "remote_write"), sync: 1, senders: 1, visible: true, replicated: true, warnings: []string{"remote_write"}},
		{name: "local with a standby named", set: with("synchronous_commit", "local"), sync: 1, senders: 1, visible: true, warnings: []string{"synchronous_commit is local"}},
		{name: "off", set: with("synchronous_commit", "off"), sync: 1, senders: 1, visible: true,
			warnings: []string{"synchronous_commit is off", "synchronous_commit is off: commits do not wait"}},
		{name: "single server", set: with("synchronous_standby_names", ""), visible: true},
		{name: "async standbys", set: with("synchronous_standby_names", ""), senders: 2, visible: true, warnings: []string{"2 standby(s) replicate asynchronously"}},
		{name: "fsync off", set: with("fsync", "off"), sync: 1, senders: 1, visible: true, replicated: true, warnings: []string{"fsync is off"}},
		{name: "full_page_writes off", set: with("full_page_writes", "off"), sync: 1, senders: 1, visible: true, replicated: true, warnings: []string{"full_page_writes is off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := judge(tt.set, tt.sync, tt.senders, tt.visible)
			if d.Replicated != tt.replicated {
				t.Errorf("Replicated = %v, want %v", d.Replicated, tt.replicated)
			}
			if len(d.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d like %q", d.Warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(d.Warnings[i], w) {
					t.Errorf("warning %d %q does not contain %q", i, d.Warnings[i], w)
				}
			}
			if !tt.visible && d.SyncStandbys != -1 {
				t.Errorf("SyncStandbys = %d, want -1 when not visible", d.SyncStandbys)
			}
		})
	}
}
