package toolcall

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/contract"
)

// argsCorners are the values the generated arguments take: the contract's
// edge cases (formats, patterns, enums), numbers whose text the canonical
// form rewrites (1.50, 1e2, -0) or refuses (1e400, 2^53+1), and strings
// that look like numbers, pointers or placeholders.
var argsCorners = []string{
	`""`, `"%"`, `"%s"`, `"ord_8Xk2Lm9Q"`, `"ord_8xk2"`, `"jane@example.com"`, `"not an email"`, `"EUR"`, `"eur"`, `"customer_request"`, `"service_failure"`, `"TCK-1042"`, `"TCK-"`,
	`"a/b"`, `"~0"`, `"{args.order_id}"`, `"\u0000"`, `"\u00e9"`, `"\ud83d\ude00"`, `"1.50"`, `"x\ny"`, `"` + strings.Repeat("k", 300) + `"`,
	`0`, `-0`, `1`, `-1`, `1.50`, `1.5`, `1.0`, `1e2`, `1E+2`, `100000`, `100001`, `9.99`, `1e21`, `123456789012345`, `9007199254740992`, `9007199254740993`, `1e400`, `-1e400`, `1e-400`, `0.1`, `4.9e-324`,
	`true`, `false`, `null`, `[]`, `{}`, `[1,"a",null]`, `{"a":{"b":[1.50]}}`,
}

// oddNames are property names beside a contract's own: keywords of JSON
// Schema and CEL, pointer characters, empty.
var oddNames = []string{"", "%", "type", "properties", "$ref", "in", "has", "size", "int", "args", "a/b", "~1", "é"}

func genArguments(r *rand.Rand, names []string) []byte {
	var b strings.Builder
	b.WriteString("{")
	n := r.Intn(len(names) + 2)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		name := names[r.Intn(len(names))]
		if r.Intn(6) == 0 {
			name = oddNames[r.Intn(len(oddNames))]
		}
		k, _ := json.Marshal(name)
		fmt.Fprintf(&b, "%s: %s", k, argsCorners[r.Intn(len(argsCorners))])
	}
	b.WriteString("}")
	return []byte(b.String())
}

// TestDecodeOnceSameAnswers puts generated arguments for every tool of the
// example registry through what admit does, with the arguments decoded by
// DecodeJSON (before) and by DecodeCanonical (now), and compares, byte for
// byte, what an agent would see: the canonical bytes and the digest (shared
// by both), whether the arguments decode, the value decoded, and the
// verdict's problem body (pointers, codes, details, review hits).
func TestDecodeOnceSameAnswers(t *testing.T) {
	reg, err := contract.Load("../examples/agent-tools")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(32))
	n := 3000
	if testing.Short() {
		n = 300
	}
	checked, refused, reviewed := 0, 0, 0
	for _, tool := range reg.Tools() {
		for _, v := range tool.Versions {
			var names []string
			if m, ok := mustDecode(t, v.Parameters).(map[string]any); ok {
				if props, ok := m["properties"].(map[string]any); ok {
					for k := range props {
						names = append(names, k)
					}
				}
			}
			sort.Strings(names)
			if len(names) == 0 {
				t.Fatalf("%s %s: no properties to generate", tool.ID, v.Version)
			}
			for i := 0; i < n; i++ {
				raw := genArguments(r, names)
				if tool.ID == "payments.issue_refund" && i%2 == 0 {
					raw = refundArguments(r)
				}
				c, digest, err := canonicalize(raw)
				if err != nil {
					continue // refused before any decode, the same way on both paths
				}
				if sum := sha256.Sum256(c); digest != "sha256:"+hex.EncodeToString(sum[:]) {
					t.Fatalf("%s: digest %s is not the SHA-256 of the canonical bytes %s", raw, digest, c)
				}
				before, berr := contract.DecodeJSON(c)
				now, nerr := contract.DecodeCanonical(c)
				if fmt.Sprint(berr) != fmt.Sprint(nerr) || !reflect.DeepEqual(before, now) {
					t.Fatalf("%s: canonical %s decodes to %#v (%v) before, %#v (%v) now", raw, c, before, berr, now, nerr)
				}
				if berr != nil {
					continue
				}
				vb, vn := v.Validate(before), v.Validate(now)
				pb, pn := verdictBody(t, vb), verdictBody(t, vn)
				if pb != pn {
					t.Fatalf("%s (canonical %s): before\n%s\nnow\n%s", raw, c, pb, pn)
				}
				checked++
				if !vb.Valid() {
					refused++
				}
				if vb.NeedsReview() {
					reviewed++
				}
			}
		}
	}
	t.Logf("%d instances compared: %d refused, %d held for review", checked, refused, reviewed)
	if checked < n || refused == 0 || checked-refused < n/10 || reviewed == 0 {
		t.Fatalf("checked %d instances, %d refused, %d held: the comparison needs valid, invalid and held arguments", checked, refused, reviewed)
	}
}

// refundArguments are valid refund arguments but for one or two values:
// most pass the schema and reach the CEL rules (a refund over 100000
// minor units is held for review; service_failure needs a ticket_id).
func refundArguments(r *rand.Rand) []byte {
	amounts := []string{"1", "1500", "1.50e3", "1500.0", "100000", "100000.0", "1e5", "100001", "1.00001e5", "9007199254740992", "123456789012345", "0", "-0", "1.5", "1e21"}
	fields := map[string]string{"order_id": `"ord_8Xk2Lm9Q"`, "amount_minor": amounts[r.Intn(len(amounts))], "currency": `"EUR"`, "reason": `"customer_request"`}
	if r.Intn(2) == 0 {
		fields["reason"] = `"service_failure"`
	}
	if r.Intn(2) == 0 {
		fields["ticket_id"] = `"TCK-1042"`
	}
	keys := []string{"order_id", "amount_minor", "currency", "reason", "ticket_id", "customer_email", "correlation_id", "idempotency_key"}
	if r.Intn(3) == 0 {
		fields[keys[r.Intn(len(keys))]] = argsCorners[r.Intn(len(argsCorners))]
	}
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		if v, ok := fields[k]; ok {
			if b.Len() > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%s", k, v)
		}
	}
	b.WriteString("}")
	return []byte(b.String())
}

func mustDecode(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := contract.DecodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// verdictBody is what an agent is answered for verdict v: the 422 problem
// body, or the review hit that holds the action (docs/reference/http-api.md).
func verdictBody(t *testing.T, v contract.Verdict) string {
	t.Helper()
	if !v.Valid() {
		w := InvalidArguments(v.Errors).Wire()
		b, err := json.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	b, _ := json.Marshal(v.Review)
	return "valid; review " + string(b)
}
