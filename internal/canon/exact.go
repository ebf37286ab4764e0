package canon

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// A number is exact when the value its decimal literal denotes is the value
// an IEEE-754 double read from it holds, as RFC 8785 writes that double: the
// shortest decimal that reads back as the same double (ECMAScript's
// Number.prototype.toString). Notation does not matter, only the value:
// 1.0, 1e0 and 1 are exact (all become 1); so are 0.1 and 1e23 (the doubles
// nearest to them print back as 0.1 and 1e+23), and -0 (the value zero,
// written 0). 9007199254740993 is not (it becomes 9007199254740992), nor is
// 0.10000000000000001 (0.1), 1e400 (no double: out of range) or 1e-400 (0).
// Every integer of up to 15 digits is exact.
//
// Canonicalizing an exact number keeps its value, so two different values
// never share a canonical form, and a downstream reading the canonical
// arguments reads the value the caller wrote.

// MaxReported bounds how many numbers a NotExactError lists.
const MaxReported = 100

// Inexact is one number of the input that is not exact.
type Inexact struct {
	Pointer string // RFC 6901 JSON pointer to the number in the input
	Offset  int    // byte offset of the number's first character
}

// NotExactError lists the numbers of an input that are not exact: the first
// MaxReported of them, in input order, and how many there are.
type NotExactError struct {
	Numbers []Inexact
	Total   int
}

func (e *NotExactError) Error() string {
	if e.Total == 1 && len(e.Numbers) == 1 {
		return fmt.Sprintf("the number at %q changes value when read as an IEEE-754 double", e.Numbers[0].Pointer)
	}
	return fmt.Sprintf("%d numbers change value when read as an IEEE-754 double", e.Total)
}

// TransformExact is Transform for values whose numbers must keep their value:
// a number that is not exact (see the package's rule above) is not
// canonicalized but reported, with every other one, in a *NotExactError.
// Other errors are Transform's.
func TransformExact(data []byte) ([]byte, error) {
	if data == nil {
		return Transform(data)
	}
	p := &parser{d: data, exact: true}
	out, err := p.run()
	if err != nil {
		return nil, err
	}
	if p.total == 0 {
		return out, nil
	}
	// Again, with the path tracked, for the pointers of what was found.
	q := &parser{d: data, exact: true, track: true}
	if _, err := q.run(); err != nil {
		return nil, err
	}
	return nil, &NotExactError{Numbers: q.bad, Total: q.total}
}

func (p *parser) run() ([]byte, error) {
	out, err := p.value(make([]byte, 0, len(p.d)))
	if err != nil {
		return nil, err
	}
	for ; p.i < len(p.d); p.i++ {
		if !ws(p.d[p.i]) {
			return nil, errors.New("improperly terminated JSON value")
		}
	}
	return out, nil
}

// notExact notes the number starting at offset start.
func (p *parser) notExact(start int) {
	p.total++
	if p.track && len(p.bad) < MaxReported {
		p.bad = append(p.bad, Inexact{Pointer: p.pointer(), Offset: start})
	}
}

func (p *parser) pointer() string {
	var b strings.Builder
	for _, s := range p.path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

// Exact reports whether the JSON number literal tok is exact (see the
// package's rule above). It is false for a string that is not a JSON number.
func Exact(tok string) bool {
	t := []byte(tok)
	if shortInt(t) {
		return true
	}
	if !number(t) {
		return false
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return false
	}
	s, err := jcs.NumberToJSON(f)
	return err == nil && sameValue(t, s)
}

// decimal is a JSON number literal read as sign × 0.d₁d₂… × 10^exp, with the
// digits d (no leading or trailing zeros) left in the literal: ip and fp are
// its integer and fraction digits, and the significant digits are those of
// ip+fp from first through last. Zero has first == last.
type decimal[T ~string | ~[]byte] struct {
	neg         bool
	ip, fp      T
	first, last int   // significant digits: indexes into ip+fp, last exclusive
	exp         int64 // saturated far beyond any double's exponent
}

// maxExp bounds an exponent as read: far past any double's (about ±324)
// and far from overflowing once the digits' position is added.
const maxExp = 1 << 40

func readDecimal[T ~string | ~[]byte](t T) decimal[T] {
	var d decimal[T]
	i := 0
	if t[0] == '-' {
		d.neg, i = true, 1
	}
	s := i
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	d.ip = t[s:i]
	if i < len(t) && t[i] == '.' {
		i++
		s = i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		d.fp = t[s:i]
	}
	var e int64
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		neg := false
		if t[i] == '+' || t[i] == '-' {
			neg = t[i] == '-'
			i++
		}
		for ; i < len(t); i++ {
			if e < maxExp {
				e = e*10 + int64(t[i]-'0')
			}
		}
		if neg {
			e = -e
		}
	}
	n := len(d.ip) + len(d.fp)
	for d.first < n && d.digit(d.first) == '0' {
		d.first++
	}
	d.last = n
	for d.last > d.first && d.digit(d.last-1) == '0' {
		d.last--
	}
	d.exp = e + int64(len(d.ip)) - int64(d.first)
	return d
}

func (d *decimal[T]) digit(i int) byte {
	if i < len(d.ip) {
		return d.ip[i]
	}
	return d.fp[i-len(d.ip)]
}

// sameValue reports whether two JSON number literals denote the same value.
func sameValue(a []byte, b string) bool {
	x, y := readDecimal(a), readDecimal(b)
	xz, yz := x.first == x.last, y.first == y.last
	if xz || yz {
		return xz && yz // -0 is 0
	}
	if x.neg != y.neg || x.exp != y.exp || x.last-x.first != y.last-y.first {
		return false
	}
	for i := 0; i < x.last-x.first; i++ {
		if x.digit(x.first+i) != y.digit(y.first+i) {
			return false
		}
	}
	return true
}
