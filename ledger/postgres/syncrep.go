package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Synchronous standbys that are named but not connected.
//
// A primary whose synchronous_standby_names names standbys makes every
// commit that writes wait until enough of them confirm it. When the named
// standbys are not connected (none runs, or the one that runs streams under
// another application_name, as a standby whose primary_conninfo has none
// does: it connects as its cluster_name or "walreceiver"), that wait never
// ends: a migration's commit, every claim, every finish. The store looks
// for this before it migrates, while a set-up takes long, and in its
// durability report, and says what to change.

// syncNames is synchronous_standby_names parsed: how many standbys must
// confirm a commit, of which names ("*" matches every standby).
type syncNames struct {
	Num    int
	Quorum bool // ANY n (…): any n of the names; otherwise the first n connected by priority
	Names  []string
}

// parseSyncNames parses synchronous_standby_names as PostgreSQL reads it:
// "s1", "s1, s2", "2 (s1, s2, s3)", "FIRST 2 (s1, s2)", "ANY 1 (s1, s2)",
// names double-quoted or not. A list without a number needs one standby.
// An empty setting is the zero syncNames (Num 0). ok is false for text
// PostgreSQL would not accept.
func parseSyncNames(s string) (n syncNames, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return syncNames{}, true
	}
	n.Num = 1
	head, list, paren := strings.Cut(s, "(")
	if paren {
		if !strings.HasSuffix(strings.TrimSpace(list), ")") {
			return syncNames{}, false
		}
		list = strings.TrimSuffix(strings.TrimSpace(list), ")")
		words := strings.Fields(head)
		if len(words) == 2 {
			switch strings.ToUpper(words[0]) {
			case "ANY":
				n.Quorum = true
			case "FIRST":
			default:
				return syncNames{}, false
			}
			words = words[1:]
		}
		if len(words) != 1 {
			return syncNames{}, false
		}
		num, err := strconv.Atoi(words[0])
		if err != nil || num < 1 {
			return syncNames{}, false
		}
		n.Num = num
	} else {
		list = s
	}
	for _, name := range splitNames(list) {
		if name == "" {
			return syncNames{}, false
		}
		n.Names = append(n.Names, name)
	}
	return n, len(n.Names) > 0
}

// splitNames splits a comma-separated list of standby names, unquoting
// double-quoted ones (a doubled quote inside is one quote). An unquoted
// name is folded to lower case, as PostgreSQL folds identifiers.
func splitNames(list string) []string {
	var out []string
	var cur strings.Builder
	quoted, inQuote := false, false
	flush := func() {
		name := strings.TrimSpace(cur.String())
		if !quoted {
			name = strings.ToLower(name)
		}
		out = append(out, name)
		cur.Reset()
		quoted = false
	}
	for i := 0; i < len(list); i++ {
		c := list[i]
		switch {
		case inQuote && c == '"' && i+1 < len(list) && list[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			inQuote = !inQuote
			quoted = true
		case c == ',' && !inQuote:
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// matches reports whether a standby streaming as application_name app is
// one of the names (PostgreSQL compares them case-insensitively).
func (n syncNames) matches(app string) bool {
	for _, name := range n.Names {
		if name == "*" || strings.EqualFold(name, app) {
			return true
		}
	}
	return false
}

// standby is one row of pg_stat_replication.
type standby struct {
	Name  string  `json:"name"`
	State string  `json:"state"`
	Sync  *string `json:"sync"` // NULL for a role without pg_read_all_stats
}

// syncReport is what the primary said about its synchronous standbys.
type syncReport struct {
	Names        string // synchronous_standby_names
	Commit       string // synchronous_commit, as the store's sessions see it
	Standbys     []standby
	SyncRepWaits int // sessions waiting on SyncRep that the store's role can see
}

const syncReportSQL = `SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'),
	coalesce((SELECT json_agg(json_build_object('name', application_name, 'state', state, 'sync', sync_state) ORDER BY application_name)
		FROM pg_stat_replication), '[]')::text,
	(SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep')`

// readSyncReport reads the primary's synchronous replication state.
func readSyncReport(ctx context.Context, q querier) (syncReport, error) {
	var r syncReport
	var standbys string
	if err := q.QueryRow(ctx, syncReportSQL).Scan(&r.Names, &r.Commit, &standbys, &r.SyncRepWaits); err != nil {
		return syncReport{}, translate(err)
	}
	if err := json.Unmarshal([]byte(standbys), &r.Standbys); err != nil {
		return syncReport{}, fmt.Errorf("read pg_stat_replication: %w", err)
	}
	return r, nil
}

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// problem says, in words an operator can act on, why commits wait for a
// synchronous standby that is not there, or returns "" when they do not
// (or when the store's role cannot tell and nothing waits).
func (r syncReport) problem() string {
	waits := r.Commit == "on" || r.Commit == "remote_apply" || r.Commit == "remote_write"
	names, ok := parseSyncNames(r.Names)
	if !waits || !ok || names.Num == 0 {
		return ""
	}
	visible := true
	confirmed := 0
	var matching, other []string
	for _, sb := range r.Standbys {
		state := sb.State
		if sb.Sync == nil {
			visible = false
		} else {
			state += ", " + *sb.Sync
			if *sb.Sync == "sync" || *sb.Sync == "quorum" {
				confirmed++
			}
		}
		desc := fmt.Sprintf("%s (%s)", sb.Name, state)
		if names.matches(sb.Name) {
			matching = append(matching, desc)
		} else {
			other = append(other, desc)
		}
	}
	if visible && confirmed >= names.Num {
		return ""
	}
	if !visible && (r.SyncRepWaits == 0 || len(matching) >= names.Num) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "commits wait for a synchronous standby that is not connected: synchronous_standby_names = %s needs %d of %s",
		quoteSetting(r.Names), names.Num, strings.Join(names.Names, ", "))
	switch {
	case len(r.Standbys) == 0:
		b.WriteString(", and no standby is connected")
	default:
		connected := append(matching, other...)
		fmt.Fprintf(&b, ", and the connected standbys are %s", strings.Join(connected, ", "))
	}
	if r.SyncRepWaits > 0 {
		fmt.Fprintf(&b, "; %d session(s) wait on SyncRep", r.SyncRepWaits)
	}
	want := "NAME"
	for _, name := range names.Names {
		found := false
		for _, sb := range r.Standbys {
			found = found || name == "*" || strings.EqualFold(name, sb.Name)
		}
		if !found {
			want = name
			break
		}
	}
	b.WriteString("; fix: ")
	if len(other) > 0 {
		name := r.Standbys[0].Name
		for _, sb := range r.Standbys {
			if !names.matches(sb.Name) {
				name = sb.Name
				break
			}
		}
		fmt.Fprintf(&b, "the standby streams as application_name %q, which synchronous_standby_names does not name: set application_name=%s in the standby's primary_conninfo "+
			"(a primary_conninfo without one, as pg_basebackup -R writes it, connects as the standby's cluster_name or walreceiver) and restart it, "+
			"or name %s in the primary's synchronous_standby_names and reload", name, want, name)
	} else {
		fmt.Fprintf(&b, "start the standby with application_name=%s in its primary_conninfo, or empty the primary's synchronous_standby_names (commits then do not wait for a standby)", want)
	}
	return b.String()
}
