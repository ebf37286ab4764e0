package canon

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/gowebpki/jcs"
)

var seeds = []string{
	`{"order_id":"ord_8Xk2Lm9Q","amount_minor":1500,"currency":"EUR","reason":"customer_request","customer_email":"jane@example.com"}`,
	`{"b":[1,2.5,-0,1e21,1E-7,0.000001,"x\u0000y\"\\\/\b\f\n\r\t"],"a":{"z":null,"y":true,"x":false}}`,
	`{"\u20ac":1,"\ud83d\ude00":2,"\uffff":3,"a":4}`, `{"a":1,"a":2}`, `[1,]`, `{"a":1,}`, `"\ud800"`, `"\udc00"`,
	`1e400`, `01`, `-`, `1.`, ` 42 `, `{"a" : [ ] , "b":{ }}`, "\"\xff\"", `{"k":"é€😀"}`, `[[[[]]]]`, `tru`, `{"a":1}x`,
	`123456789012345`, `1234567890123456`, `9007199254740993`, `-0.0`, `[1 2]`, `{"a":"\u00e9"}`, `"\uD83D\uDE00"`,
}

func FuzzSameAsJCS(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := jcs.Transform(in)
		got, gerr := Transform(in)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: jcs err %v, canon err %v", in, werr, gerr)
		}
		if werr == nil && !bytes.Equal(want, got) {
			t.Fatalf("%q:\njcs   %s\ncanon %s", in, want, got)
		}
	})
}

func BenchmarkJCS(b *testing.B) {
	in := []byte(seeds[0])
	b.ReportAllocs()
	for b.Loop() {
		c, _ := jcs.Transform(in)
		sha256.Sum256(c)
	}
}

func BenchmarkCanon(b *testing.B) {
	in := []byte(seeds[0])
	b.ReportAllocs()
	for b.Loop() {
		c, _ := Transform(in)
		sha256.Sum256(c)
	}
}
