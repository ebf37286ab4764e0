package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestParseSyncNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want syncNames
		ok   bool
	}{
		{"", syncNames{}, true},
		{"s1", syncNames{Num: 1, Names: []string{"s1"}}, true},
		{"S1, s2", syncNames{Num: 1, Names: []string{"s1", "s2"}}, true},
		{"*", syncNames{Num: 1, Names: []string{"*"}}, true},
		{"2 (s1, s2, s3)", syncNames{Num: 2, Names: []string{"s1", "s2", "s3"}}, true},
		{"FIRST 2 (s1, s2)", syncNames{Num: 2, Names: []string{"s1", "s2"}}, true},
		{"any 1 (s1,s2)", syncNames{Num: 1, Quorum: true, Names: []string{"s1", "s2"}}, true},
		{`"Node A", "b""c"`, syncNames{Num: 1, Names: []string{"Node A", `b"c`}}, true},
		{"ANY (s1)", syncNames{}, false},
		{"0 (s1)", syncNames{}, false},
		{"SOME 1 (s1)", syncNames{}, false},
		{"1 (s1", syncNames{}, false},
		{"s1,,s2", syncNames{}, false},
	} {
		got, ok := parseSyncNames(tt.in)
		if ok != tt.ok || (ok && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("parseSyncNames(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseSyncNames: any text the server could hold parses or is refused
// without a panic, and what parses needs at least one standby of at least
// one name.
func FuzzParseSyncNames(f *testing.F) {
	for _, s := range []string{"s1", "FIRST 2 (s1, s2)", `ANY 1 ("a", b)`, "*", "(", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseSyncNames(s)
		if ok && strings.TrimSpace(s) != "" && (n.Num < 1 || len(n.Names) == 0) {
			t.Fatalf("parseSyncNames(%q) = %+v", s, n)
		}
		r := syncReport{Names: s, Commit: "on", Standbys: []standby{{Name: "walreceiver", State: "streaming", Sync: ptr("async")}}}
		_ = r.problem()
	})
}

func ptr(s string) *string { return &s }

func TestSyncProblem(t *testing.T) {
	t.Parallel()
	async, sync, quorum := ptr("async"), ptr("sync"), ptr("quorum")
	for _, tt := range []struct {
		name string
		r    syncReport
		want []string // substrings; nil: no problem
	}{
		{"no names", syncReport{Names: "", Commit: "on"}, nil},
		{"commits do not wait", syncReport{Names: "s1", Commit: "local"}, nil},
		{"named and connected", syncReport{Names: "s1", Commit: "on", Standbys: []standby{{"s1", "streaming", sync}}}, nil},
		{"any standby, connected", syncReport{Names: "*", Commit: "on", Standbys: []standby{{"walreceiver", "streaming", sync}}}, nil},
		{"quorum met", syncReport{Names: "ANY 1 (s1, s2)", Commit: "on", Standbys: []standby{{"s2", "streaming", quorum}}}, nil},
		{"misnamed", syncReport{Names: "s1", Commit: "on", Standbys: []standby{{"walreceiver", "streaming", async}}, SyncRepWaits: 2},
			[]string{"synchronous_standby_names = 's1'", `application_name "walreceiver"`, "application_name=s1 in the standby's primary_conninfo", "2 session(s) wait on SyncRep", "name walreceiver in the primary's synchronous_standby_names"}},
		{"none connected", syncReport{Names: "s1", Commit: "remote_apply"},
			[]string{"no standby is connected", "start the standby with application_name=s1"}},
		{"too few", syncReport{Names: "FIRST 2 (s1, s2)", Commit: "on", Standbys: []standby{{"s1", "streaming", sync}}},
			[]string{"needs 2 of s1, s2", "s1 (streaming, sync)", "application_name=s2"}},
		{"not visible, nothing waits", syncReport{Names: "s1", Commit: "on", Standbys: []standby{{"walreceiver", "streaming", nil}}}, nil},
		{"not visible, sessions wait", syncReport{Names: "s1", Commit: "on", Standbys: []standby{{"walreceiver", "streaming", nil}}, SyncRepWaits: 1},
			[]string{"1 session(s) wait on SyncRep", "application_name=s1"}},
	} {
		got := tt.r.problem()
		if tt.want == nil {
			if got != "" {
				t.Errorf("%s: problem = %q, want none", tt.name, got)
			}
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: problem = %q, lacks %q", tt.name, got, w)
			}
		}
	}
}

func TestSetUpErrTimeouts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{translate(&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}), true},
		{translate(&pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}), true},
		{fmt.Errorf("migrate: %w", context.DeadlineExceeded), true},
		{translate(&pgconn.PgError{Code: "42P01", Message: "relation does not exist"}), false},
		{errors.New("migrate: database schema version 9 is newer than this binary's 5"), false},
	} {
		if got := IsUnavailable(setUpErr(tt.err)); got != tt.want {
			t.Errorf("setUpErr(%v) unavailable = %v, want %v", tt.err, got, tt.want)
		}
	}
}
