package jsonschemax

import (
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

func propName(e *jsonschema.ValidationError) string {
	if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		return k.Property
	}
	return "?"
}

func sortStrings(s []string) { sort.Strings(s) }
