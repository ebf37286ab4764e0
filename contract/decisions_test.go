package contract_test

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/toolgate/toolgate/contract"
)

const goodDecision = `id: refund-late-delivery-v3
decision: "Refund in full when the delivery status is LATE after the promised window, using the enum reason LATE_DELIVERY, through issue_refund with a client key."
context: "Late deliveries were the top complaint of Q2."
alternatives: ["partial refund", "store credit"]
owner: payment-platform
review_trigger: "late-delivery refunds exceed 2% of orders in a month"
date: 2026-08-11
policy_version: tool-policy-v3
tool: payments.issue_refund
relies_on: [{pointer: /reason, value: LATE_DELIVERY}, {pointer: /order_id}, {pointer: /amount_minor, value: 100}]
`

// decisionsFS is the example payments.issue_refund tool with decisions/ files.
func decisionsFS(t *testing.T, files map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	src := os.DirFS("../examples/agent-tools")
	err := fs.WalkDir(src, "payments.issue_refund", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, path)
		fsys[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		fsys["decisions/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

// The loader reads rule records strictly (docs/reference/files.md): every field, nothing
// unknown, required fields, the id as the file's name, a real date, JSON
// pointers, scalar values, and supersedes naming a record once, without
// cycles.
func TestDecisionRecordsLoadStrictly(t *testing.T) {
	t.Parallel()
	v2 := strings.NewReplacer("refund-late-delivery-v3", "refund-late-delivery-v2", "tool-policy-v3", "tool-policy-v2").Replace(goodDecision)
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the problems, in order; nil: loads
	}{
		{"good", map[string]string{"refund-late-delivery-v3.yaml": goodDecision}, nil},
		{"superseded", map[string]string{"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivery-v2\n", "refund-late-delivery-v2.yaml": v2}, nil},
		{"unknown field", map[string]string{"refund-late-delivery-v3.yaml": goodDecision + "reviewer: jane\n"}, []string{"unknown field"}},
		{"missing fields", map[string]string{"a.yaml": "id: a\nrelies_on: []\n"}, []string{"decision: is required", "owner: is required", "date: is required", "policy_version: is required", "tool: is required"}},
		{"id is not the file name", map[string]string{"other.yaml": goodDecision}, []string{`id: "refund-late-delivery-v3" is not the file's name (other.yaml)`}},
		{"bad date", map[string]string{"refund-late-delivery-v3.yaml": strings.Replace(goodDecision, "2026-08-11", "11/08/2026", 1)}, []string{`date: "11/08/2026" is not a date YYYY-MM-DD`}},
		{"bad pointer", map[string]string{"refund-late-delivery-v3.yaml": strings.Replace(goodDecision, "{pointer: /order_id}", "{pointer: order_id}", 1)}, []string{`relies_on[1].pointer: "order_id" is not a JSON pointer`}},
		{"no pointer", map[string]string{"refund-late-delivery-v3.yaml": strings.Replace(goodDecision, "{pointer: /order_id}", "{value: x}", 1)}, []string{"relies_on[1]: needs a pointer"}},
		{"value not a scalar", map[string]string{"refund-late-delivery-v3.yaml": strings.Replace(goodDecision, "value: LATE_DELIVERY", "value: [LATE, EARLY]", 1)}, []string{"relies_on[0].value: must be one value"}},
		{"supersedes a missing record", map[string]string{"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivery-v1\n"},
			[]string{`supersedes: no record "refund-late-delivery-v1" in decisions/`}},
		{"supersedes a typo", map[string]string{"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivry-v2\n", "refund-late-delivery-v2.yaml": v2},
			[]string{`did you mean "refund-late-delivery-v2"?`}},
		{"superseded twice", map[string]string{
			"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivery-v2\n",
			"refund-late-delivery-v4.yaml": strings.Replace(goodDecision, "refund-late-delivery-v3", "refund-late-delivery-v4", 1) + "supersedes: refund-late-delivery-v2\n",
			"refund-late-delivery-v2.yaml": v2}, []string{"refund-late-delivery-v2 is already superseded by refund-late-delivery-v3"}},
		{"a cycle", map[string]string{
			"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivery-v2\n",
			"refund-late-delivery-v2.yaml": v2 + "supersedes: refund-late-delivery-v3\n"}, []string{"comes back to", "comes back to"}},
		{"itself", map[string]string{"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivery-v3\n"}, []string{"cannot supersede itself"}},
		{"the same id twice", map[string]string{"refund-late-delivery-v3.yaml": goodDecision, "refund-late-delivery-v3.yml": goodDecision}, []string{"is also the id of decisions/refund-late-delivery-v3.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, problems := contract.InspectFS(decisionsFS(t, tt.files))
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d is %q, want it to contain %q", i, got[i], w)
				}
			}
			if tt.want == nil && len(reg.Decisions()) != len(tt.files) {
				t.Fatalf("%d records loaded", len(reg.Decisions()))
			}
		})
	}
}

func TestDecisionStatus(t *testing.T) {
	t.Parallel()
	v2 := strings.NewReplacer("refund-late-delivery-v3", "refund-late-delivery-v2").Replace(goodDecision)
	reg, err := contract.LoadFS(decisionsFS(t, map[string]string{
		"refund-late-delivery-v3.yaml": goodDecision + "supersedes: refund-late-delivery-v2\n",
		"refund-late-delivery-v2.yaml": v2,
	}))
	if err != nil {
		t.Fatal(err)
	}
	d3, d2 := reg.Decision("refund-late-delivery-v3"), reg.Decision("refund-late-delivery-v2")
	if !d3.Live() || d2.Live() || d2.SupersededBy != "refund-late-delivery-v3" {
		t.Fatalf("status: v3 live %v, v2 superseded by %q", d3.Live(), d2.SupersededBy)
	}
	if live := reg.LiveDecisions("payments.issue_refund"); len(live) != 1 || live[0] != d3 {
		t.Fatalf("live records %v", live)
	}
	if d3.ReliesOn[0].Value != "LATE_DELIVERY" || d3.ReliesOn[1].Value != nil || d3.Date != "2026-08-11" || d3.Line("relies_on") != 10 {
		t.Fatalf("record %+v, relies_on line %d", d3, d3.Line("relies_on"))
	}
}

// FuzzDecisionRecord: whatever a decisions/ file holds, loading never panics,
// and a record that loads has the fields docs/reference/files.md requires.
func FuzzDecisionRecord(f *testing.F) {
	f.Add(goodDecision)
	f.Add(goodDecision + "supersedes: refund-late-delivery-v3\n")
	f.Add("id: refund-late-delivery-v3\nrelies_on: [{pointer: /a~2}, {pointer: /b, value: {x: 1}}]\n")
	f.Add("- not a mapping\n")
	f.Fuzz(func(t *testing.T, body string) {
		// No tool folder: the records load all the same (and fast).
		reg, _ := contract.InspectFS(fstest.MapFS{"decisions/refund-late-delivery-v3.yaml": &fstest.MapFile{Data: []byte(body)}})
		for _, d := range reg.Decisions() {
			if d.ID != "refund-late-delivery-v3" || d.Decision == "" || d.Owner == "" || d.Tool == "" || d.Date == "" || d.PolicyVersion == "" {
				t.Fatalf("an incomplete record loaded: %+v", d)
			}
			for _, r := range d.ReliesOn {
				if !strings.HasPrefix(r.Pointer, "/") {
					t.Fatalf("a bad pointer loaded: %q", r.Pointer)
				}
			}
		}
	})
}
