package configcheck

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/contract"
)

var formCheckTools = fstest.MapFS{
	"mail.send/schemas/v1.0.0.json": {Data: []byte(`{"tool_id":"mail.send","version":"1.0.0","name":"send",
  "description":"Send a message.","effect":"mutating",
  "parameters":{"type":"object","properties":{
    "to":{"type":"string","description":"The recipient."},
    "opts":{"type":"object","properties":{"to":{"type":"string"},"cc":{"type":"string"}},"additionalProperties":false,"description":"Options."},
    "extra":{"$ref":"#/$defs/extra","description":"More."},
    "meta":{"type":"object","description":"Anything."},
    "tags":{"type":"array","items":{"type":"string"},"description":"Tags."}},
  "$defs":{"extra":{"type":"object","properties":{"cc":{"type":"string"},"bcc":{"type":"string"}},"additionalProperties":false}},
  "required":["to"]},
  "result":{"type":"object"}}`)},
}

// Name collisions of a form body are found at load, from the schema and
// the binding, whatever a call gives or leaves out.
func TestCheckFormNames(t *testing.T) {
	t.Parallel()
	reg, err := contract.LoadFS(formCheckTools)
	if err != nil {
		t.Fatal(err)
	}
	head := "bindings:\n  mail.send:\n    url: http://127.0.0.1:9090/send/{args.to}\n    body: form\n"
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"brackets by default: nothing to collide", head, nil},
		{"deepObject and explode false write under the name", head + "    form_encoding:\n      opts: {style: deepObject}\n      meta: {style: form, explode: false}\n", nil},
		{"an exploded member that is a parameter, left out of the body", head + "    body_omit: [to]\n    form_encoding:\n      opts: {style: form}\n", []string{
			`toolgate.yaml:7: bindings.mail.send.form_encoding.opts: mail.send v1.0.0: the member "to" of opts would be written as the field "to", which is also the parameter "to" (the downstream would read one as the other, even when "to" is left out of the body): use style deepObject, or rename one`,
		}},
		{"two exploded objects sharing a member", head + "    form_encoding:\n      extra: {style: form}\n      opts: {style: form, explode: true}\n", []string{
			`toolgate.yaml:7: bindings.mail.send.form_encoding.opts: mail.send v1.0.0: the member "cc" of opts would be written as the field "cc", which the member "cc" of extra is too: use style deepObject for one of them`,
			`toolgate.yaml:7: bindings.mail.send.form_encoding.opts: mail.send v1.0.0: the member "to" of opts would be written as the field "to", which is also the parameter "to" (the downstream would read one as the other, even when "to" is left out of the body): use style deepObject, or rename one`,
		}},
		{"an exploded object any member of which a call may name", head + "    form_encoding:\n      meta: {style: form}\n", []string{
			`toolgate.yaml:6: bindings.mail.send.form_encoding.meta: mail.send v1.0.0: style form with explode writes each member of meta as a field of its own, and its schema lets a call name any member, so a member could take another field's name: declare its members (additionalProperties: false) or use style deepObject`,
		}},
		{"style form on an array is not an exploded object", head + "    form_encoding:\n      tags: {style: form}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range Check(c, reg) {
				if p.Rule == config.RuleFormNames {
					got = append(got, p.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
