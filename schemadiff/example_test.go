package schemadiff_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/toolgate/toolgate/schemadiff"
)

// A new required input without a default breaks old agents; the same change read as a
// result is compatible.
func ExampleDiffSchemas() {
	var oldS, newS any
	json.Unmarshal([]byte(`{"type":"object","properties":{"order_id":{"type":"string"}}}`), &oldS)
	json.Unmarshal([]byte(`{"type":"object","properties":{"order_id":{"type":"string"},"channel":{"enum":["chat","email"]}},"required":["channel"]}`), &newS)
	for _, dir := range []schemadiff.Direction{schemadiff.Input, schemadiff.Output} {
		r := schemadiff.DiffSchemas(oldS, newS, dir, schemadiff.Options{})
		fmt.Println(dir, r.Tier, r.Changes[0].Kind, r.Changes[0].Pointer)
	}
	// Output:
	// input major required_property_added /properties/channel
	// output compatible required_property_added /properties/channel
}

func ExampleDiff() {
	load := func(name string) schemadiff.Contract {
		data, _ := os.ReadFile("testdata/contracts/" + name)
		c, _ := schemadiff.ParseContract(data)
		return c
	}
	r := schemadiff.Diff(load("v2.2.0.json"), load("v2.3.0.json"), schemadiff.Options{Consumers: 2})
	fmt.Println(r.Tier, r.RequiredBump, *r.DeclaredBump, r.BumpOK)
	// Output:
	// compatible minor minor true
}
