package schemadiff

import (
	"math/rand"
	"testing"
)

// TestModelOverApproximates checks the invariant the proof rule rests on: the model of a
// schema node never refuses a value the validator accepts there. What the model does
// not decide is left out (accepting more) and recorded as undecided, never read as a
// refusal. Documents and values come from the differential generator (untranslatable
// patterns in every position, counts at 2^31 and 2^53 in every branch, unevaluated*
// beside branches, every draft); the oracle is the validator.
func TestModelOverApproximates(t *testing.T) {
	t.Parallel()
	checked := 0
	for seed := int64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewSource(seed))
		g := &dgen{r: r, dr: genDrafts[r.Intn(len(genDrafts))]}
		root := deepCopyNumbers(g.document())
		d := newSDoc("doc", root, &formatChecker{})
		d.compile()
		if d.opaque != "" {
			continue
		}
		e := newEngine(&formatChecker{})
		var ptrs []string
		eachSchema(root, d.draft, false, func(ptr string, _ map[string]any) bool {
			ptrs = append(ptrs, ptr)
			return true
		})
		ig := &igen{r: r, root: root}
		for _, ptr := range ptrs {
			n := d.node(ptr)
			raw, _ := lookupPointer(root, ptr)
			if n == nil || len(n.ps) == 0 {
				continue
			}
			for i := 0; i < 12; i++ {
				x := decodeNumbers(marshalJSON(ig.from(raw, 0)))
				valid, known := d.val.valid(ptr, x)
				if !known || !valid {
					continue
				}
				checked++
				for _, p := range n.ps {
					if kw := e.plainRefuses(p, x); kw != "" {
						t.Errorf("seed %d: at %q the model refuses %s (%s) which the validator accepts\nschema: %s",
							seed, ptr, canon(x), kw, canon(root))
					}
				}
			}
		}
	}
	if checked < 2000 {
		t.Fatalf("only %d accepted values were checked", checked)
	}
	t.Logf("%d accepted values checked against the model", checked)
}
