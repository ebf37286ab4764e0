package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// event is the part of a Record that masking changes, written as JSON text so
// each case reads like OPA's mask tests: an input event, an expected event.
type event struct {
	Arguments, Result, StateBefore, StateAfter string
	Erased, Masked                             []string
}

func (e event) record() Record {
	raw := func(s string) json.RawMessage {
		if s == "" {
			return nil
		}
		return json.RawMessage(s)
	}
	return Record{InputHash: "sha256:abc", Arguments: raw(e.Arguments), Result: raw(e.Result),
		StateBefore: raw(e.StateBefore), StateAfter: raw(e.StateAfter)}
}

func TestMaskerApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   MaskerConfig
		mode  ArgumentsMode
		input event
		want  event
	}{
		{
			name:  "no sensitive pointers keeps the arguments",
			input: event{Arguments: `{"order_id":"ord_1","amount":5}`},
			want:  event{Arguments: `{"order_id":"ord_1","amount":5}`},
		},
		{
			name:  "mask a top-level field",
			cfg:   MaskerConfig{Arguments: MaskRules("/customer_email")},
			input: event{Arguments: `{"order_id":"ord_1","customer_email":"a@b.example"}`},
			want:  event{Arguments: `{"order_id":"ord_1","customer_email":"***"}`, Masked: []string{"/arguments/customer_email"}},
		},
		{
			name:  "erase a top-level field",
			cfg:   MaskerConfig{Arguments: EraseRules("/card_number")},
			input: event{Arguments: `{"order_id":"ord_1","card_number":"4111111111111111"}`},
			want:  event{Arguments: `{"order_id":"ord_1"}`, Erased: []string{"/arguments/card_number"}},
		},
		{
			name:  "a pointer to a missing member is not listed",
			cfg:   MaskerConfig{Arguments: MaskRules("/customer_email", "/customer/phone")},
			input: event{Arguments: `{"order_id":"ord_1","customer":{}}`},
			want:  event{Arguments: `{"order_id":"ord_1","customer":{}}`},
		},
		{
			name:  "mask values of every type",
			cfg:   MaskerConfig{Arguments: MaskRules("/n", "/b", "/o", "/a", "/z")},
			input: event{Arguments: `{"n":12.50,"b":true,"o":{"x":1},"a":[1,2],"z":null}`},
			want: event{Arguments: `{"n":"***","b":"***","o":"***","a":"***","z":"***"}`,
				Masked: []string{"/arguments/a", "/arguments/b", "/arguments/n", "/arguments/o", "/arguments/z"}},
		},
		{
			name:  "wildcard over array items lists each item",
			cfg:   MaskerConfig{Arguments: MaskRules("/items/*/email")},
			input: event{Arguments: `{"items":[{"email":"a@x","sku":"s1"},{"sku":"s2"},{"email":"c@x"}]}`},
			want: event{Arguments: `{"items":[{"email":"***","sku":"s1"},{"sku":"s2"},{"email":"***"}]}`,
				Masked: []string{"/arguments/items/0/email", "/arguments/items/2/email"}},
		},
		{
			name:  "wildcard over map values",
			cfg:   MaskerConfig{Arguments: MaskRules("/metadata/*")},
			input: event{Arguments: `{"metadata":{"ssn":"123","dob":"1990"},"id":1}`},
			want: event{Arguments: `{"metadata":{"ssn":"***","dob":"***"},"id":1}`,
				Masked: []string{"/arguments/metadata/dob", "/arguments/metadata/ssn"}},
		},
		{
			name:  "erasing array items leaves null so indices keep their meaning",
			cfg:   MaskerConfig{Arguments: EraseRules("/tags/1")},
			input: event{Arguments: `{"tags":["a","secret","c"]}`},
			want:  event{Arguments: `{"tags":["a",null,"c"]}`, Erased: []string{"/arguments/tags/1"}},
		},
		{
			name:  "erase every member of a map",
			cfg:   MaskerConfig{Arguments: EraseRules("/headers/*")},
			input: event{Arguments: `{"headers":{"authorization":"Bearer x","cookie":"y"}}`},
			want: event{Arguments: `{"headers":{}}`,
				Erased: []string{"/arguments/headers/authorization", "/arguments/headers/cookie"}},
		},
		{
			name:  "escaped segments match keys with / and ~ and are listed escaped",
			cfg:   MaskerConfig{Arguments: MaskRules("/a~1b", "/c~0d")},
			input: event{Arguments: `{"a/b":"x","c~d":"y","ab":"z"}`},
			want: event{Arguments: `{"a/b":"***","c~d":"***","ab":"z"}`,
				Masked: []string{"/arguments/a~1b", "/arguments/c~0d"}},
		},
		{
			name:  "the empty pointer masks the whole payload",
			cfg:   MaskerConfig{Arguments: MaskRules("")},
			input: event{Arguments: `{"a":1}`},
			want:  event{Arguments: `"***"`, Masked: []string{"/arguments"}},
		},
		{
			name:  "the empty pointer erases the whole payload",
			cfg:   MaskerConfig{Arguments: EraseRules("")},
			input: event{Arguments: `{"a":1}`},
			want:  event{Erased: []string{"/arguments"}},
		},
		{
			name:  "an erased parent hides its masked children",
			cfg:   MaskerConfig{Arguments: append(MaskRules("/customer/email"), EraseRules("/customer")...)},
			input: event{Arguments: `{"customer":{"email":"a@x","name":"A"},"id":1}`},
			want:  event{Arguments: `{"id":1}`, Erased: []string{"/arguments/customer"}},
		},
		{
			name:  "two pointers to one value list it once",
			cfg:   MaskerConfig{Arguments: MaskRules("/card/*", "/card/number")},
			input: event{Arguments: `{"card":{"number":"4111","cvc":"123"}}`},
			want: event{Arguments: `{"card":{"number":"***","cvc":"***"}}`,
				Masked: []string{"/arguments/card/cvc", "/arguments/card/number"}},
		},
		{
			name:  "a pointer through a scalar matches nothing",
			cfg:   MaskerConfig{Arguments: MaskRules("/name/first", "/*/x")},
			input: event{Arguments: `{"name":"Ann"}`},
			want:  event{Arguments: `{"name":"Ann"}`},
		},
		{
			name:  "a numeric segment is an object key too",
			cfg:   MaskerConfig{Arguments: MaskRules("/codes/0", "/list/01")},
			input: event{Arguments: `{"codes":{"0":"secret"},"list":["a","b"]}`},
			want:  event{Arguments: `{"codes":{"0":"***"},"list":["a","b"]}`, Masked: []string{"/arguments/codes/0"}},
		},
		{
			name:  "digest mode writes no arguments and no result",
			cfg:   MaskerConfig{Arguments: MaskRules("/customer_email")},
			mode:  ModeDigest,
			input: event{Arguments: `{"customer_email":"a@b.example"}`, Result: `{"id":"r1"}`},
			want:  event{},
		},
		{
			name:  "digest mode does not need JSON arguments",
			mode:  ModeDigest,
			input: event{Arguments: `{not json`},
			want:  event{},
		},
		{
			name:  "full mode keeps sensitive values",
			cfg:   MaskerConfig{Arguments: MaskRules("/customer_email"), State: MaskRules("/email")},
			mode:  ModeFull,
			input: event{Arguments: `{"customer_email":"a@b.example"}`, StateBefore: `{"email":"a@b.example"}`},
			want:  event{Arguments: `{"customer_email":"a@b.example"}`, StateBefore: `{"email":"a@b.example"}`},
		},
		{
			name:  "result masked by the result's pointers",
			cfg:   MaskerConfig{Arguments: MaskRules("/card"), Result: MaskRules("/card/number")},
			input: event{Arguments: `{"id":1}`, Result: `{"status":"ok","card":{"number":"4111","brand":"visa"}}`},
			want: event{Arguments: `{"id":1}`, Result: `{"status":"ok","card":{"number":"***","brand":"visa"}}`,
				Masked: []string{"/result/card/number"}},
		},
		{
			name:  "a result that is not JSON is erased whole",
			input: event{Arguments: `{}`, Result: `<html>oops</html>`},
			want:  event{Arguments: `{}`, Erased: []string{"/result"}},
		},
		{
			name:  "a result that is not JSON is erased in full mode too",
			mode:  ModeFull,
			input: event{Arguments: `{}`, Result: `Internal Server Error`},
			want:  event{Arguments: `{}`, Erased: []string{"/result"}},
		},
		{
			name:  "state bodies masked by the state pointers",
			cfg:   MaskerConfig{State: append(MaskRules("/customer/email"), EraseRules("/card")...)},
			input: event{StateBefore: `{"status":"paid","customer":{"email":"a@x"},"card":"4111"}`, StateAfter: `{"status":"refunded","customer":{"email":"a@x"}}`},
			want: event{StateBefore: `{"status":"paid","customer":{"email":"***"}}`, StateAfter: `{"status":"refunded","customer":{"email":"***"}}`,
				Erased: []string{"/state_before/card"}, Masked: []string{"/state_after/customer/email", "/state_before/customer/email"}},
		},
		{
			name:  "state bodies are masked in digest mode",
			cfg:   MaskerConfig{State: MaskRules("/email")},
			mode:  ModeDigest,
			input: event{Arguments: `{"a":1}`, StateAfter: `{"email":"a@x","n":1}`},
			want:  event{StateAfter: `{"email":"***","n":1}`, Masked: []string{"/state_after/email"}},
		},
		{
			name:  "a state body that is not JSON is erased whole",
			input: event{StateBefore: `timeout`, StateAfter: `null`},
			want:  event{Erased: []string{"/state_before"}},
		},
		{
			name:  "a duplicated container is re-encoded even when its last copy holds nothing sensitive",
			cfg:   MaskerConfig{Arguments: MaskRules("/items/*/email")},
			input: event{Arguments: `{"items":[{"email":"early@x"}],"items":[]}`},
			want:  event{Arguments: `{"items":[]}`},
		},
		{
			name:  "a key spelled with JSON escapes is still found",
			cfg:   MaskerConfig{Arguments: MaskRules("/customer_email")},
			input: event{Arguments: `{"customer\u005femail":"a@b.example"}`},
			want:  event{Arguments: `{"customer_email":"***"}`, Masked: []string{"/arguments/customer_email"}},
		},
		{
			name:  "any depth matches at every level below, none included",
			cfg:   MaskerConfig{Arguments: MaskRules("/t/**/s")},
			input: event{Arguments: `{"s":"top","t":{"s":"x","n":{"s":"y","l":[{"s":"z"},"s"]}}}`},
			want: event{Arguments: `{"s":"top","t":{"s":"***","n":{"s":"***","l":[{"s":"***"},"s"]}}}`,
				Masked: []string{"/arguments/t/n/l/0/s", "/arguments/t/n/s", "/arguments/t/s"}},
		},
		{
			name:  "any depth erases inside arrays and objects",
			cfg:   MaskerConfig{Arguments: EraseRules("/**/pin")},
			input: event{Arguments: `{"pin":"a1","list":[{"pin":"b2","k":1}],"m":{"x":{"pin":"c3"}}}`},
			want: event{Arguments: `{"list":[{"k":1}],"m":{"x":{}}}`,
				Erased: []string{"/arguments/list/0/pin", "/arguments/m/x/pin", "/arguments/pin"}},
		},
		{
			name: "a sensitive value is replaced inside the record's other strings",
			cfg:  MaskerConfig{Arguments: MaskRules("/card"), Result: MaskRules("/token")},
			input: event{Arguments: `{"card":{"number":"4111-2222","exp":"12/31"},"memo":"paid with 4111-2222, exp 12/31"}`,
				Result: `{"token":"tok_9","message":"card 4111-2222 declined","again":"tok_9"}`},
			want: event{Arguments: `{"card":"***","memo":"paid with ***, exp ***"}`,
				Result: `{"token":"***","message":"card *** declined","again":"***"}`,
				Masked: []string{"/arguments/card", "/result/token"}},
		},
		{
			name:  "values shorter than MinScrubLength are masked where they stand only",
			cfg:   MaskerConfig{Arguments: MaskRules("/pin")},
			input: event{Arguments: `{"pin":"12","memo":"12 items"}`},
			want:  event{Arguments: `{"pin":"***","memo":"12 items"}`, Masked: []string{"/arguments/pin"}},
		},
		{
			name:  "duplicate keys collapse: no copy of a sensitive value survives",
			cfg:   MaskerConfig{Arguments: MaskRules("/email")},
			input: event{Arguments: `{"email":"first@x","email":"second@x"}`},
			want:  event{Arguments: `{"email":"***"}`, Masked: []string{"/arguments/email"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := NewMasker(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := tt.input.record()
			if err := m.Apply(&rec, tt.mode); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			got := event{Arguments: string(rec.Arguments), Result: string(rec.Result),
				StateBefore: string(rec.StateBefore), StateAfter: string(rec.StateAfter),
				Erased: sortedUnique(rec.Erased), Masked: sortedUnique(rec.Masked)}
			for _, f := range []struct{ name, got, want string }{
				{"arguments", got.Arguments, tt.want.Arguments}, {"result", got.Result, tt.want.Result},
				{"state_before", got.StateBefore, tt.want.StateBefore}, {"state_after", got.StateAfter, tt.want.StateAfter},
			} {
				if !jsonEqual(t, f.got, f.want) {
					t.Errorf("%s = %s, want %s", f.name, f.got, f.want)
				}
			}
			if want := sortedUnique(tt.want.Erased); !slices.Equal(got.Erased, want) {
				t.Errorf("erased = %q, want %q", got.Erased, want)
			}
			if want := sortedUnique(tt.want.Masked); !slices.Equal(got.Masked, want) {
				t.Errorf("masked = %q, want %q", got.Masked, want)
			}
			if rec.InputHash != "sha256:abc" {
				t.Errorf("input_hash = %q, want it kept", rec.InputHash)
			}
			if tt.input.Result != "" && !strings.HasPrefix(rec.ResultHash, "sha256:") {
				t.Errorf("result_hash = %q, want a sha256", rec.ResultHash)
			}
		})
	}
}

// jsonEqual compares two JSON texts by value; "" stands for absent.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("got invalid JSON %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("want invalid JSON %q: %v", b, err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func TestMaskerApplyUnmaskable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  MaskerConfig
		mode ArgumentsMode
		args string
	}{
		{name: "masked mode, not JSON", cfg: MaskerConfig{Arguments: MaskRules("/a")}, args: `{"a":"secret"`},
		{name: "masked mode, no rules, not JSON", args: `{"a":"secret"`},
		{name: "masked mode, trailing data", cfg: MaskerConfig{Arguments: MaskRules("/a")}, args: `{"a":1} {"a":"secret"}`},
		{name: "full mode, not JSON", mode: ModeFull, args: `secret`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := NewMasker(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Encode(Record{Arguments: json.RawMessage(tt.args)}, m, tt.mode)
			if !errors.Is(err, ErrUnmaskable) {
				t.Fatalf("Encode error = %v, want ErrUnmaskable", err)
			}
		})
	}
}

func TestNewMaskerValidatesPointers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     MaskerConfig
		wantErr string
	}{
		{name: "valid pointers", cfg: MaskerConfig{Arguments: MaskRules("", "/", "/a~0b~1c", "/*/x", "/items/0")}},
		{name: "no leading slash", cfg: MaskerConfig{Arguments: MaskRules("customer_email")}, wantErr: `arguments rule: pointer "customer_email": must be empty or start with /`},
		{name: "bad escape", cfg: MaskerConfig{Result: MaskRules("/a~2")}, wantErr: `result rule: pointer "/a~2": ~2 is not an escape`},
		{name: "dangling tilde", cfg: MaskerConfig{State: EraseRules("/a~")}, wantErr: `state rule: pointer "/a~": ~ at the end of a segment`},
		{name: "unknown action", cfg: MaskerConfig{Arguments: []Rule{{Pointer: "/a", Action: 7}}}, wantErr: `unknown action 7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewMasker(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewMasker: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewMasker error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestApplyLeavesInputUntouched(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskerConfig{Arguments: append(MaskRules("/email"), EraseRules("/card")...),
		Result: MaskRules("/token"), State: MaskRules("/email")})
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"email":"a@x","card":"4111","n":1}`)
	result := []byte(`{"token":"t0k"}`)
	state := []byte(`{"email":"a@x"}`)
	keep := [][]byte{bytes.Clone(args), bytes.Clone(result), bytes.Clone(state)}
	rec := Record{Arguments: args, Result: result, StateBefore: state, StateAfter: state}
	if _, err := Encode(rec, m, ModeMasked); err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{args, result, state} {
		if !bytes.Equal(b, keep[i]) {
			t.Errorf("payload %d modified: %s, was %s", i, b, keep[i])
		}
	}
}

func TestHashKeyMasksConsistently(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskerConfig{Arguments: MaskRules("/a", "/b", "/c"), HashKey: []byte("k1")})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{Arguments: json.RawMessage(`{"a":"same@x","b":"same@x","c":"other@x"}`)}
	if err := m.Apply(&rec, ModeMasked); err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(rec.Arguments, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got["a"], "hmac-sha256:") || len(got["a"]) != len("hmac-sha256:")+32 {
		t.Fatalf("a = %q, want hmac-sha256:<32 hex>", got["a"])
	}
	if got["a"] != got["b"] || got["a"] == got["c"] {
		t.Errorf("tokens a=%s b=%s c=%s: want equal values equal, others different", got["a"], got["b"], got["c"])
	}
	if strings.Contains(string(rec.Arguments), "same@x") {
		t.Errorf("value leaked: %s", rec.Arguments)
	}
}

// TestErrorTextsAreScrubbed: a probe error that quotes a sensitive argument
// (raw, path- or query-escaped) is written with the value replaced, in masked
// and digest mode alike.
func TestErrorTextsAreScrubbed(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskerConfig{Arguments: MaskRules("/account", "/name")})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []ArgumentsMode{ModeMasked, ModeDigest} {
		rec := Record{Arguments: json.RawMessage(`{"account":"acc/42","name":"Zoë Q","n":7}`),
			StateBeforeError: `state probe: Get "http://h/state/acc%2F42?who=Zo%C3%AB+Q": refused`,
			StateAfterError:  `state probe: account acc/42 of "Zo\u00eb Q" unknown`}
		if err := m.Apply(&rec, mode); err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{rec.StateBeforeError, rec.StateAfterError} {
			if strings.Contains(text, "42") || strings.Contains(text, "Zo") {
				t.Errorf("%s: the error text keeps a sensitive value: %s", mode, text)
			}
		}
		if !strings.HasPrefix(rec.StateBeforeError, "state probe: Get") {
			t.Errorf("%s: the rest of the text is lost: %s", mode, rec.StateBeforeError)
		}
	}
}

func TestScrubber(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskerConfig{Arguments: MaskRules("/l/**/s"), Result: MaskRules("/pin")})
	if err != nil {
		t.Fatal(err)
	}
	scrub := m.Scrubber(json.RawMessage(`{"l":[{"s":"alpha"},{"x":{"s":1234}}],"other":"beta"}`), json.RawMessage(`{"pin":"P-77"}`))
	got := scrub("alpha, beta, 1234 and P-77; alpha again")
	if want := "***, beta, *** and ***; *** again"; got != want {
		t.Errorf("scrubbed %q, want %q", got, want)
	}
	if got := (*Masker)(nil).Scrubber(json.RawMessage(`{"a":"alpha"}`), nil)("alpha"); got != "alpha" {
		t.Errorf("a nil masker's scrubber changed %q", got)
	}
	if got := m.Scrubber(json.RawMessage(`not json`), nil)("not json"); got != "not json" {
		t.Errorf("a scrubber of unreadable arguments changed %q", got)
	}
}

func TestCoversArgument(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskerConfig{Arguments: MaskRules("/card", "/list/*/pin", "/tree/**/secret")})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/card": true, "/card/number": true, "/cardholder": false, "/list/3/pin": true, "/list/3": false,
		"/tree/secret": true, "/tree/a/b/secret/x": true, "/tree/a": false, "": false, "bad": true,
	} {
		if got := m.CoversArgument(p); got != want {
			t.Errorf("CoversArgument(%q) = %v, want %v", p, got, want)
		}
	}
	if (*Masker)(nil).CoversArgument("/card") {
		t.Error("a nil masker covers nothing")
	}
}

// TestProviderTextsAreScrubbed: provider evidence the call carries (its
// reason, a transition's routes and reason, the policy version) is free
// text, so a sensitive argument quoted in it is replaced, and the reason
// itself is kept.
func TestProviderTextsAreScrubbed(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskerConfig{Arguments: MaskRules("/account")})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{Arguments: json.RawMessage(`{"account":"acc-4242"}`), PolicyVersion: "policy for acc-4242",
		Provider: &Provider{Name: "openai", Route: "fallback", CallID: "c1", Reason: "retry of acc-4242"},
		ProviderTransition: &ProviderTransition{From: ProviderRoute{Name: "openai", Route: "primary"},
			To: ProviderRoute{Name: "openai", Route: "acc-4242"}, ActionState: "running", Reason: "primary timed out on acc-4242"}}
	if err := m.Apply(&rec, ModeMasked); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	if strings.Contains(string(b), "4242") {
		t.Errorf("a sensitive value stays in the provider evidence: %s", b)
	}
	if rec.Provider.Reason != "retry of "+MaskToken || rec.ProviderTransition.Reason != "primary timed out on "+MaskToken {
		t.Errorf("the reasons are lost: %+v %+v", rec.Provider, rec.ProviderTransition)
	}
}
