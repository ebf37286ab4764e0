package gateway

import (
	"bytes"
	"encoding/json"
	"github.com/getkin/kin-openapi/openapi3"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/masking"
	"github.com/toolgate/toolgate/internal/testrig"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/toolcall"
)

// The gateway writes and the client reads the same wire types (package api).
// These tests fail when they drift: a field of the wire type the gateway does
// not fill, a field the gateway writes that the type does not describe, or a
// record that does not come back the same through the client.

func wireActions() []*ledger.Action {
	at := time.Date(2026, 11, 30, 8, 0, 0, 123456789, time.UTC)
	full := &ledger.Action{
		Tenant: "acme", ID: "wire-key-0001", ToolID: "payments.issue_refund", Version: "1.0.0", State: ledger.Unknown,
		NeedsOperator: true, ArgsDigest: "sha256:0000000000000000000000000000000000000000000000000000000000000000", Arguments: []byte(`{"a":1}`), Attempts: 2,
		LeaseOwner: "g1", LeaseUntil: at, LastSentAt: at.Add(time.Second), UnknownSince: at.Add(2 * time.Second),
		Result:        &ledger.Result{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"refund_id":"re_1"}`)},
		ProviderCalls: []ledger.ProviderCall{{Name: "openai", Route: "primary", CallID: "call_1", At: at}},
		CorrelationID: "conv-1", Scope: "order:1", PolicyVersion: "p1", CreatedAt: at, UpdatedAt: at.Add(time.Minute),
		History: []ledger.Transition{{From: ledger.Pending, To: ledger.Running, Reason: "claimed", By: "gateway", At: at},
			{From: ledger.Unknown, To: ledger.Unknown, Reason: "assigned to alice: on it", By: "operator:oncall", At: at.Add(time.Hour),
				Assignment: &ledger.AssignmentChange{Assignee: "alice", Note: "on it"}}},
	}
	binary := &ledger.Action{Tenant: "acme", ID: "wire-key-0002", ToolID: "t", State: ledger.Rejected,
		Result: &ledger.Result{StatusCode: 500, Body: []byte{0xff, 0x00}}, CreatedAt: at, UpdatedAt: at}
	full.ProviderCallsOmitted = 4
	tombstone := &ledger.Action{Tenant: "acme", ID: "wire-key-0003", ToolID: "t", State: ledger.Succeeded,
		Result: &ledger.Result{StatusCode: 201}, CreatedAt: at, UpdatedAt: at}
	return []*ledger.Action{full, binary, tombstone}
}

// wireServer is a server with nothing but the example tools' maskers, for
// renderAction and renderActionDetail.
func wireServer(t *testing.T) *Server {
	t.Helper()
	m, err := masking.New(testrig.Registry(t))
	if err != nil {
		t.Fatal(err)
	}
	reg := testrig.Registry(t)
	s := &Server{calls: toolcall.New(toolcall.Config{Registry: reg, Ledger: &ledger.Service{}, Bindings: testrig.Bindings("http://127.0.0.1:9")})}
	s.masksP.Store(m)
	return s
}

func TestActionRecordRoundTripsThroughTheClient(t *testing.T) {
	t.Parallel()
	filled := map[string]bool{}
	for _, a := range wireActions() {
		out, err := json.Marshal(wireServer(t).renderActionDetail(a))
		if err != nil {
			t.Fatal(err)
		}
		// What the gateway writes is what the API's own document describes
		// (api/openapi.yaml's Action: closed, with its required fields): an
		// oracle written apart from the Go types, so a field added to
		// api.Action and not documented fails here.
		var doc any
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if err := actionSchema(t).VisitJSON(doc); err != nil {
			t.Fatalf("%s: the gateway writes what api/openapi.yaml's Action does not describe: %v\n%s", a.ID, err, out)
		}
		// The client reads it back field for field.
		var c client.Action
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(c.Action)
		if !bytes.Equal(again, out) {
			t.Fatalf("%s through the client:\n%s\nwant\n%s", a.ID, again, out)
		}
		v := reflect.ValueOf(c.Action)
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				filled[v.Type().Field(i).Name] = true
			}
		}
	}
	// Every field of the wire type is filled by some action: none is left
	// behind by renderAction.
	typ := reflect.TypeOf(api.Action{})
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !filled[name] {
			t.Errorf("renderAction never fills api.Action.%s", name)
		}
	}
	if !filled["Tombstone"] {
		t.Error("the client does not learn of tombstones")
	}
}

func TestListPageAndProblemRoundTripThroughTheClient(t *testing.T) {
	t.Parallel()
	page := api.Page{NextCursor: "next"}
	for _, a := range wireActions() {
		page.Actions = append(page.Actions, wireServer(t).renderAction(a))
	}
	out, _ := json.Marshal(page)
	var cp client.Page
	if err := json.Unmarshal(out, &cp); err != nil || len(cp.Actions) != 3 || cp.NextCursor != "next" || !cp.Actions[2].Tombstone {
		t.Fatalf("page through the client: %v %+v", err, cp)
	}

	p := toolcall.InvalidArguments(nil)
	p.Errors = []api.FieldError{{Pointer: "/a", Code: "type", Detail: "must be a string"}}
	p.ActionID, p.State, p.RetryAfter = "wire-key-0001", ledger.Pending, 2
	rec := httptest.NewRecorder()
	writeProblem(rec, p)
	var got client.Problem
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := p.Wire()
	want.RetryAfter = 0 // a header, not the body
	if !reflect.DeepEqual(got, want) || rec.Header().Get("Retry-After") != "2" || rec.Code != 422 {
		t.Fatalf("problem through the client: %+v, want %+v (Retry-After %q)", got, want, rec.Header().Get("Retry-After"))
	}
}

// actionSchema is the Action schema of the API's OpenAPI document.
func actionSchema(t *testing.T) *openapi3.Schema {
	t.Helper()
	raw, err := OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.Components.Schemas["Action"]
	if ref == nil || ref.Value == nil {
		t.Fatal("api/openapi.yaml has no Action schema")
	}
	return ref.Value
}
