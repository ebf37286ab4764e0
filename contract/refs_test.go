package contract

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// refChain is a contract whose parameters hold a chain of n $defs, each a
// $ref to the next, the last a string.
func refChain(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"tool_id":"x.chain","version":"1.0.0","name":"chain","description":"A chain.","effect":"read_only","parameters":{"type":"object","properties":{"a":{"$ref":"#/$defs/d0","description":"a"}},"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"$ref":"#/$defs/d%d"},`, i, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}}},"result":{"type":"object"}}`, n)
	return []byte(b.String())
}

func loadChain(doc []byte) (uint64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := LoadFS(fstest.MapFS{"x.chain/schemas/v1.0.0.json": {Data: doc}})
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// A long chain of references is refused while it is walked, before the
// compiler resolves it: the load costs a small multiple of the document
// (it cost 270 times the document, and minutes, when the compiler walked
// it), and the error names the limit.
func TestRefChainIsRefusedWhileWalked(t *testing.T) {
	doc := refChain(220_000) // about 7 MB
	alloc, err := loadChain(doc)
	t.Logf("a %d-byte chain: %d bytes allocated; %v", len(doc), alloc, err)
	if err == nil || !strings.Contains(err.Error(), "references") {
		t.Fatalf("a 220,000-link chain loaded: %v", err)
	}
	if alloc > uint64(20*len(doc)) {
		t.Fatalf("refusing a %d-byte chain allocated %d bytes, more than 20 times its size", len(doc), alloc)
	}
	// The chain limit: 64 links load, 65 do not, at the link's pointer.
	if _, err := loadChain(refChain(MaxRefChain - 1)); err != nil {
		t.Fatalf("a chain of %d: %v", MaxRefChain, err)
	}
	_, err = loadChain(refChain(MaxRefChain + 1))
	if err == nil || !strings.Contains(err.Error(), "/parameters/properties/a/$ref") || !strings.Contains(err.Error(), "more than 64 references") {
		t.Fatalf("a chain of %d: %v", MaxRefChain+2, err)
	}
}
