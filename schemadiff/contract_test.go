package schemadiff

import (
	"errors"
	"testing"
)

func baseContract(t testing.TB) Contract {
	t.Helper()
	return Contract{
		ToolID: "refund.create_request", Version: "2.1.0", Name: "create_refund_request",
		Description: "Create a refund request.", Effect: "mutating",
		Parameters: mustJSON(t, `{"type":"object","additionalProperties":false,"properties":{"order_id":{"type":"string"},"amount_cents":{"type":"integer","x-impact":"funds"}},"required":["order_id"]}`),
		Result:     mustJSON(t, `{"type":"object","properties":{"status":{"enum":["created","pending_review"]}}}`),
		Errors:     []ErrorDef{{Code: "ORDER_NOT_FOUND", Category: "business", HTTPStatus: 404}},
		Rules:      []Rule{{ID: "order_format", Rule: "args.order_id.startsWith('ord_')", Message: "not an order id", Field: "/order_id", Outcome: "reject"}},
	}
}

// TestDiffContract covers the contract-level comparisons and the bump verdict.
func TestDiffContract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		change   func(c *Contract)
		opts     Options
		kind     string
		pointer  string
		tier     Tier
		dir      Direction
		overall  Tier
		declared Bump
		bumpOK   bool
	}{
		{name: "name changed", change: func(c *Contract) { c.Name = "refund" }, kind: "name_changed", pointer: "/name", tier: TierMajor, dir: Tool, declared: BumpMinor},
		{name: "tool description changed", change: func(c *Contract) { c.Description = "Refund." }, kind: "description_changed", pointer: "/description", tier: TierHighRisk, dir: Tool, declared: BumpMinor, bumpOK: true},
		{name: "effect read_only to mutating", change: func(c *Contract) { c.Effect = "mutating" }, kind: "effect_changed", pointer: "/effect", tier: TierMajor, dir: Tool, declared: BumpMinor},
		{name: "tool id changed", change: func(c *Contract) { c.ToolID = "refund.other" }, kind: "tool_id_changed", pointer: "/tool_id", tier: TierMajor, dir: Tool, declared: BumpMinor},
		{name: "error added", change: func(c *Contract) {
			c.Errors = append(c.Errors, ErrorDef{Code: "ORDER_LOCKED", Category: "business", HTTPStatus: 409})
		}, kind: "error_added", pointer: "/errors/1", tier: TierCompatible, dir: Output, declared: BumpMinor, bumpOK: true},
		{name: "error added needs a minor bump", change: func(c *Contract) {
			c.Version = "2.1.1"
			c.Errors = append(c.Errors, ErrorDef{Code: "ORDER_LOCKED", Category: "business", HTTPStatus: 409})
		}, kind: "error_added", pointer: "/errors/1", tier: TierCompatible, dir: Output, declared: BumpPatch},
		{name: "error category changed", change: func(c *Contract) {
			c.Errors = []ErrorDef{{Code: "ORDER_NOT_FOUND", Category: "validation", HTTPStatus: 404}}
		}, kind: "error_category_changed", pointer: "/errors/0", tier: TierHighRisk, dir: Output, declared: BumpMinor, bumpOK: true},
		{name: "error status changed", change: func(c *Contract) {
			c.Errors = []ErrorDef{{Code: "ORDER_NOT_FOUND", Category: "business", HTTPStatus: 410}}
		}, kind: "error_status_changed", pointer: "/errors/0", tier: TierHighRisk, dir: Output, declared: BumpMinor, bumpOK: true},
		{name: "error retryable changed", change: func(c *Contract) {
			c.Errors = []ErrorDef{{Code: "ORDER_NOT_FOUND", Category: "business", HTTPStatus: 404, Retryable: true}}
		}, kind: "error_retryable_changed", pointer: "/errors/0", tier: TierHighRisk, dir: Output, declared: BumpMinor, bumpOK: true},
		{name: "error removed", change: func(c *Contract) { c.Errors = nil }, kind: "error_removed", pointer: "/errors/0", tier: TierHighRisk, dir: Output, declared: BumpMinor, bumpOK: true},
		{name: "rule added", change: func(c *Contract) {
			c.Rules = append(c.Rules, Rule{ID: "cap", Rule: "args.amount_cents < 100000", Outcome: "review"})
		}, kind: "rule_added", pointer: "/rules/1", tier: TierHighRisk, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "rule changed", change: func(c *Contract) {
			c.Rules = []Rule{{ID: "order_format", Rule: "args.order_id.startsWith('ord')", Message: "not an order id", Field: "/order_id", Outcome: "reject"}}
		}, kind: "rule_changed", pointer: "/rules/0", tier: TierHighRisk, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "rule outcome changed", change: func(c *Contract) { c.Rules[0].Outcome = "review" }, kind: "rule_outcome_changed", pointer: "/rules/0", tier: TierHighRisk, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "rule message changed", change: func(c *Contract) { c.Rules[0].Message = "order ids start with ord_" }, kind: "rule_message_changed", pointer: "/rules/0", tier: TierCompatible, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "rule field changed", change: func(c *Contract) { c.Rules[0].Field = "/order" }, kind: "rule_field_changed", pointer: "/rules/0", tier: TierCompatible, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "rule removed", change: func(c *Contract) { c.Rules = nil }, kind: "rule_removed", pointer: "/rules/0", tier: TierCompatible, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "new required input needs major", change: func(c *Contract) {
			c.Parameters = mustJSON(t, `{"type":"object","additionalProperties":false,"properties":{"order_id":{"type":"string"},"amount_cents":{"type":"integer","x-impact":"funds"},"approval_channel":{"enum":["email","slack"]}},"required":["order_id","approval_channel"]}`)
		}, kind: "required_property_added", pointer: "/parameters/properties/approval_channel", tier: TierMajor, dir: Input, declared: BumpMinor},
		{name: "major change with major bump", change: func(c *Contract) { c.Version = "3.0.0"; c.Name = "refund" }, kind: "name_changed", pointer: "/name", tier: TierMajor, dir: Tool, declared: BumpMajor, bumpOK: true},
		{name: "x-impact raises a high-risk input change", change: func(c *Contract) {
			c.Parameters = mustJSON(t, `{"type":"object","additionalProperties":false,"properties":{"order_id":{"type":"string"},"amount_cents":{"type":"integer","x-impact":"funds","maximum":50000}},"required":["order_id"]}`)
		}, kind: "bound_tightened", pointer: "/parameters/properties/amount_cents/maximum", tier: TierMajor, dir: Input, declared: BumpMinor},
		{name: "rule on an x-impact field raised to major", change: func(c *Contract) { c.Rules[0].Rule = "args.amount_cents >= 100"; c.Rules[0].Field = "/amount_cents" }, kind: "rule_changed", pointer: "/rules/0", tier: TierMajor, dir: Input, declared: BumpMinor},
		{name: "result enum value added", change: func(c *Contract) {
			c.Result = mustJSON(t, `{"type":"object","properties":{"status":{"enum":["created","pending_review","rejected"]}}}`)
		}, kind: "enum_value_added", pointer: "/result/properties/status/enum", tier: TierHighRisk, dir: Output, declared: BumpMinor, bumpOK: true},
		{name: "two consumers raise high risk to major", opts: Options{Consumers: 2}, change: func(c *Contract) { c.Description = "Refund." }, kind: "description_changed", pointer: "/description", tier: TierMajor, dir: Tool, declared: BumpMinor},
		{name: "two consumers leave compatible alone", opts: Options{Consumers: 2}, change: func(c *Contract) { c.Rules = nil }, kind: "rule_removed", pointer: "/rules/0", tier: TierCompatible, dir: Input, declared: BumpMinor, bumpOK: true},
		{name: "downgrade never satisfies", change: func(c *Contract) { c.Version = "2.0.9"; c.Rules = nil }, kind: "rule_removed", pointer: "/rules/0", tier: TierCompatible, dir: Input, declared: BumpDowngrade},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			oldC, newC := baseContract(t), baseContract(t)
			if tt.name == "effect read_only to mutating" {
				oldC.Effect = "read_only"
			}
			newC.Version = "2.2.0"
			tt.change(&newC)
			r := Diff(oldC, newC, tt.opts)
			c, ok := findKind(r, tt.kind)
			if !ok {
				t.Fatalf("no %s change in %+v", tt.kind, r.Changes)
			}
			if c.Tier != tt.tier || c.Pointer != tt.pointer || c.Direction != tt.dir {
				t.Errorf("change = %s %s %s, want %s %s %s (%s)", c.Tier, c.Pointer, c.Direction, tt.tier, tt.pointer, tt.dir, c.Detail)
			}
			if r.DeclaredBump == nil || *r.DeclaredBump != tt.declared {
				t.Errorf("declared bump = %v, want %s", r.DeclaredBump, tt.declared)
			}
			if r.BumpOK != tt.bumpOK {
				t.Errorf("bump_ok = %t, want %t (tier %s, required %s)", r.BumpOK, tt.bumpOK, r.Tier, r.RequiredBump)
			}
			if r.RequiredBump != RequiredBump(r.Tier) {
				t.Errorf("required bump %s does not follow tier %s", r.RequiredBump, r.Tier)
			}
		})
	}
}

func TestDiffContractUnchanged(t *testing.T) {
	t.Parallel()
	r := Diff(baseContract(t), baseContract(t), Options{Consumers: 5})
	if len(r.Changes) != 0 || r.Tier != TierNone || r.RequiredBump != BumpNone || !r.BumpOK {
		t.Fatalf("self-diff = %+v", r)
	}
	if r.DeclaredBump == nil || *r.DeclaredBump != BumpNone {
		t.Fatalf("declared bump = %v, want none", r.DeclaredBump)
	}
}

func TestParseContract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		wantErr error
		ok      bool
	}{
		{name: "contract", data: `{"tool_id":"a","version":"1.0.0","parameters":{"type":"object"},"errors":[{"code":"X","category":"business","http_status":400,"retryable":true}]}`, ok: true},
		{name: "plain schema", data: `{"type":"object"}`, wantErr: ErrNotContract},
		{name: "no parameters", data: `{"tool_id":"a"}`, wantErr: ErrNotContract},
		{name: "not JSON", data: `{`},
		{name: "wrong field type", data: `{"tool_id":1,"parameters":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseContract([]byte(tt.data))
			switch {
			case tt.ok && err != nil:
				t.Fatalf("err = %v", err)
			case tt.ok:
				if c.ToolID != "a" || len(c.Errors) != 1 || !c.Errors[0].Retryable || c.Errors[0].HTTPStatus != 400 {
					t.Fatalf("parsed %+v", c)
				}
			case err == nil:
				t.Fatal("want an error")
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestDeclaredBump(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new string
		want           Bump
		ok             bool
	}{
		{"patch", "2.1.0", "2.1.1", BumpPatch, true},
		{"minor", "2.1.0", "2.2.0", BumpMinor, true},
		{"major", "2.1.0", "3.0.0", BumpMajor, true},
		{"same", "2.1.0", "v2.1.0", BumpNone, true},
		{"downgrade", "2.1.0", "2.0.5", BumpDowngrade, true},
		{"prerelease ignored", "2.1.0", "2.2.0-rc.1", BumpMinor, true},
		{"unparsable", "2.1", "2.2.0", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := DeclaredBump(tt.old, tt.new)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("DeclaredBump(%s, %s) = %s, %t; want %s, %t", tt.old, tt.new, got, ok, tt.want, tt.ok)
			}
		})
	}
}
