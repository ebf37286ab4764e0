package sqlite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/ledger"
)

// The action row (migration 007).
//
// Columns hold what a query filters or sorts on and the payloads Purge
// drops; doc holds every other field as one JSON object with short keys,
// zero values left out. Migration 007 writes the same keys with
// json_object, nulls included, so the decoder reads both.
//
//	v  version             no needs_operator   d  args_digest
//	n  attempts            lo lease_owner      ls last_sent_at (unix ns)
//	us unknown_since (ns)  c  checks           rs result_status (present iff a result)
//	rt result_content_type sc scope            ua updated_at (ns)
//	su send_until (ns; absent on rows written before it)
type doc struct {
	Version       string `json:"v"`
	NeedsOperator *int64 `json:"no"` // 0 or 1; json_object writes the integer
	ArgsDigest    string `json:"d"`
	Attempts      int    `json:"n"`
	LeaseOwner    string `json:"lo"`
	LastSentAt    *int64 `json:"ls"`
	SendUntil     *int64 `json:"su"`
	UnknownSince  *int64 `json:"us"`
	Checks        int    `json:"c"`
	ResultStatus  *int   `json:"rs"`
	ResultType    string `json:"rt"`
	Scope         string `json:"sc"`
	UpdatedAt     *int64 `json:"ua"`
}

// appendDoc writes a's doc fields; it fails on a time outside the storable range.
func appendDoc(dst []byte, a *ledger.Action) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			dst = appendString(dst, v)
		}
	}
	num := func(k string, v int64) {
		key(k)
		dst = strconv.AppendInt(dst, v, 10)
	}
	tm := func(k string, t time.Time) error {
		if t.IsZero() {
			return nil
		}
		n := t.UnixNano()
		if !time.Unix(0, n).Equal(t) {
			_, err := nanos(t)
			return err
		}
		num(k, n)
		return nil
	}
	str("v", a.Version)
	if a.NeedsOperator {
		num("no", 1)
	}
	str("d", a.ArgsDigest)
	if a.Attempts != 0 {
		num("n", int64(a.Attempts))
	}
	str("lo", a.LeaseOwner)
	if err := tm("ls", a.LastSentAt); err != nil {
		return nil, err
	}
	if err := tm("su", a.SendUntil); err != nil {
		return nil, err
	}
	if err := tm("us", a.UnknownSince); err != nil {
		return nil, err
	}
	if a.Checks != 0 {
		num("c", int64(a.Checks))
	}
	if a.Result != nil {
		num("rs", int64(a.Result.StatusCode))
		str("rt", a.Result.ContentType)
	}
	str("sc", a.Scope)
	if err := tm("ua", a.UpdatedAt); err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// readDoc sets a's doc fields from text; a result comes back with a nil
// body, for the caller to fill from its column.
func readDoc(a *ledger.Action, text []byte) error {
	var d doc
	if err := json.Unmarshal(text, &d); err != nil {
		return err
	}
	a.Version, a.ArgsDigest, a.Attempts, a.LeaseOwner = d.Version, d.ArgsDigest, d.Attempts, d.LeaseOwner
	a.NeedsOperator = d.NeedsOperator != nil && *d.NeedsOperator != 0
	a.LastSentAt, a.UnknownSince, a.UpdatedAt = docTime(d.LastSentAt), docTime(d.UnknownSince), docTime(d.UpdatedAt)
	a.SendUntil = docTime(d.SendUntil)
	a.Checks, a.Scope = d.Checks, d.Scope
	if d.ResultStatus != nil {
		a.Result = &ledger.Result{StatusCode: *d.ResultStatus, ContentType: d.ResultType}
	}
	return nil
}

func docTime(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// appendString quotes s as JSON. Invalid UTF-8 is written as \ufffd, as
// encoding/json does (the doc's strings are versions, digests, owners and
// scopes).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, `\u00`...)
				dst = append(dst, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// historyTail returns the transitions of h as the history column stores
// them: the JSON array's elements without its brackets; nil for none.
func historyTail(h []ledger.Transition) any {
	if len(h) == 0 {
		return nil
	}
	return historyText(h, false)
}

// historyText is h as historyTail gives it, after a comma when comma is
// set: what an append adds to the stored text.
func historyText(h []ledger.Transition, comma bool) string {
	b := ledger.AppendHistoryJSON(make([]byte, 1, 1+160*len(h)), h) // "?[...]"
	if comma {
		b[1] = ','
		return string(b[1 : len(b)-1])
	}
	return string(b[2 : len(b)-1])
}

// readHistory decodes the history column.
func readHistory(joined []byte) ([]ledger.Transition, error) {
	if len(bytes.TrimSpace(joined)) == 0 {
		return nil, nil
	}
	buf := make([]byte, 0, len(joined)+2)
	buf = append(append(append(buf, '['), joined...), ']')
	var h []ledger.Transition
	if err := json.Unmarshal(buf, &h); err != nil {
		return nil, fmt.Errorf("decode history: %w", err)
	}
	return h, nil
}
