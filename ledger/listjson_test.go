package ledger_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
)

// utc returns the lists as the stores hand them to json.Marshal: times in UTC.
func utcHistory(h []ledger.Transition) []ledger.Transition {
	out := make([]ledger.Transition, len(h))
	for i, t := range h {
		t.At = t.At.UTC()
		out[i] = t
	}
	return out
}

func utcCalls(pcs []ledger.ProviderCall) []ledger.ProviderCall {
	out := make([]ledger.ProviderCall, len(pcs))
	for i, pc := range pcs {
		pc.At = pc.At.UTC()
		out[i] = pc
	}
	return out
}

func sameAsEncodingJSON(t *testing.T, h []ledger.Transition, pcs []ledger.ProviderCall) {
	t.Helper()
	want, err := json.Marshal(utcHistory(h))
	if err != nil {
		t.Skip(err) // a time json.Marshal refuses; the stores refuse it too
	}
	if got := ledger.AppendHistoryJSON(nil, h); !bytes.Equal(got, want) {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	want, err = json.Marshal(utcCalls(pcs))
	if err != nil {
		t.Skip(err)
	}
	if got := ledger.AppendProviderCallsJSON(nil, pcs); !bytes.Equal(got, want) {
		t.Fatalf("provider calls:\n got %s\nwant %s", got, want)
	}
}

var listTime = time.Date(2026, 11, 30, 9, 1, 2, 345600000, time.FixedZone("CET", 3600))

func TestListJSONSameAsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "claimed for attempt 1", `quote " and back\slash`, "<b>&amp;</b>", "tab\tnew\nline\rcr\x00\x1f\x7f",
		"ünïcødé ✓ 😀", "bad \xff\xfe utf-8 \xc3", "line\u2028para\u2029sep", "operator:oncall",
	} {
		h := []ledger.Transition{
			{From: "", To: ledger.Pending, Reason: s, By: "gateway", At: listTime},
			{From: ledger.Pending, To: ledger.Running, Reason: "claimed", By: s, At: listTime.Add(time.Nanosecond)},
			{From: ledger.Running, To: ledger.Succeeded, Reason: "201", By: "gateway", At: time.Unix(0, 0)},
			{From: ledger.Running, To: ledger.Running, Reason: "route", By: "gateway", At: listTime, Provider: &ledger.ProviderTransition{
				From: ledger.ProviderRoute{Name: s, Route: "primary"}, To: ledger.ProviderRoute{Route: s}, State: ledger.Running, Reason: s}},
			{From: ledger.Unknown, To: ledger.Unknown, Provider: &ledger.ProviderTransition{To: ledger.ProviderRoute{Name: s}}},
			{From: ledger.Unknown, To: ledger.Unknown, Reason: s, By: "operator:oncall", At: listTime, Assignment: &ledger.AssignmentChange{Assignee: s}},
			{From: ledger.Unknown, To: ledger.Unknown, At: listTime, Assignment: &ledger.AssignmentChange{Assignee: "bob", Previous: s, TakeOver: true, Note: s}},
			{From: ledger.Unknown, To: ledger.Unknown, At: listTime, Assignment: &ledger.AssignmentChange{Previous: "bob"}},
		}
		pcs := []ledger.ProviderCall{
			{Name: s, Route: "/v1/chat/completions", CallID: "call_1", At: listTime},
			{At: listTime}, // every omitempty field empty
			{CallID: s, At: time.Time{}},
		}
		sameAsEncodingJSON(t, h, pcs)
	}
	if got := string(ledger.AppendHistoryJSON(nil, nil)); got != "[]" {
		t.Fatalf("empty history: %s", got)
	}
	if got := string(ledger.AppendProviderCallsJSON([]byte("x"), nil)); got != "x[]" {
		t.Fatalf("appends to dst: %s", got)
	}
}

func FuzzListJSONSameAsEncodingJSON(f *testing.F) {
	f.Add("claimed for attempt 1", "gateway", "openai", "/v1/responses", "call_1", int64(1764493262345600000), 3600)
	f.Add("<&>\"\\\x00\u2028\xff", "operator:a@b", "", "", "", int64(0), -7200)
	f.Fuzz(func(t *testing.T, reason, by, name, route, callID string, nanos int64, offset int) {
		at := time.Unix(0, nanos).In(time.FixedZone("z", offset%86400))
		h := []ledger.Transition{{From: ledger.State(name), To: ledger.State(route), Reason: reason, By: by, At: at},
			{From: ledger.State(by), To: ledger.State(by), At: at, Provider: &ledger.ProviderTransition{
				From: ledger.ProviderRoute{Name: name, Route: route}, To: ledger.ProviderRoute{Name: callID, Route: by}, State: ledger.State(reason), Reason: reason}},
			{From: ledger.State(by), To: ledger.State(by), At: at, Assignment: &ledger.AssignmentChange{
				Assignee: name, Previous: route, TakeOver: nanos%2 == 0, Note: reason}}}
		pcs := []ledger.ProviderCall{{Name: name, Route: route, CallID: callID, At: at}, {Name: reason, At: at}}
		sameAsEncodingJSON(t, h, pcs)
	})
}
