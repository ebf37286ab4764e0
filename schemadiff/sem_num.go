package schemadiff

import (
	"encoding/json"
	"math/big"
	"strings"
)

// Numbers are reasoned about exactly, with rationals, as the validator compares them.
// The values an alternative accepts of one numeric kind (integers, or numbers with a
// fractional part) are an interval, intersected with the multiples of a lattice step
// when multipleOf (or integrality) applies.

type numSet struct {
	lo, hi     *big.Rat
	loEx, hiEx bool
	step       *big.Rat // nil: dense
	integral   bool
	fracOnly   bool
	notMult    []*big.Rat
	excluded   []*big.Rat
}

var ratOne = big.NewRat(1, 1)

func numsOf(t term, tb tmask) numSet {
	s := numSet{integral: tb == tInt || tb == tIntX, fracOnly: tb == tFrac}
	for _, p := range t.plains {
		if p.min != nil && (s.lo == nil || p.min.Cmp(s.lo) > 0 || p.min.Cmp(s.lo) == 0 && p.minEx) {
			s.lo, s.loEx = p.min, p.minEx
		}
		if p.max != nil && (s.hi == nil || p.max.Cmp(s.hi) < 0 || p.max.Cmp(s.hi) == 0 && p.maxEx) {
			s.hi, s.hiEx = p.max, p.maxEx
		}
		for _, m := range p.mult {
			s.step = ratLCM(s.step, m)
		}
		if p.notMult != nil {
			s.notMult = append(s.notMult, p.notMult)
		}
		for _, x := range p.excluded {
			if r := ratOf(x); r != nil {
				s.excluded = append(s.excluded, r)
			}
		}
	}
	if s.integral {
		s.step = ratLCM(s.step, ratOne)
	}
	return s
}

func ratLCM(a, b *big.Rat) *big.Rat {
	if a == nil {
		return new(big.Rat).Set(b)
	}
	num := new(big.Int).Mul(a.Num(), b.Num())
	g := new(big.Int).GCD(nil, nil, a.Num(), b.Num())
	num.Quo(num, g)
	den := new(big.Int).GCD(nil, nil, a.Denom(), b.Denom())
	return new(big.Rat).SetFrac(num, den)
}

func isMultiple(x, m *big.Rat) bool {
	q := new(big.Rat).Quo(x, m)
	return q.IsInt()
}

// restrict intersects the set with [lo, hi] bounds (nil: unbounded).
func (s numSet) restrict(lo *big.Rat, loEx bool, hi *big.Rat, hiEx bool) numSet {
	if lo != nil && (s.lo == nil || lo.Cmp(s.lo) > 0 || lo.Cmp(s.lo) == 0 && loEx) {
		s.lo, s.loEx = lo, loEx
	}
	if hi != nil && (s.hi == nil || hi.Cmp(s.hi) < 0 || hi.Cmp(s.hi) == 0 && hiEx) {
		s.hi, s.hiEx = hi, hiEx
	}
	return s
}

// kRange returns the lattice indexes k with k*step inside the bounds (nil: unbounded).
func (s numSet) kRange() (kmin, kmax *big.Int) {
	if s.lo != nil {
		q := new(big.Rat).Quo(s.lo, s.step)
		kmin = ceilRat(q)
		if s.loEx && q.IsInt() {
			kmin.Add(kmin, big.NewInt(1))
		}
	}
	if s.hi != nil {
		q := new(big.Rat).Quo(s.hi, s.step)
		kmax = floorRat(q)
		if s.hiEx && q.IsInt() {
			kmax.Sub(kmax, big.NewInt(1))
		}
	}
	return kmin, kmax
}

func floorRat(r *big.Rat) *big.Int {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	return q // Euclidean division: the floor, since denominators are positive
}

func ceilRat(r *big.Rat) *big.Int {
	f := floorRat(r)
	if !r.IsInt() {
		f.Add(f, big.NewInt(1))
	}
	return f
}

// empty proves the set has no value (ignoring exclusions, which only shrink it further:
// false means "not proven empty").
func (s numSet) empty() bool {
	if s.lo != nil && s.hi != nil {
		c := s.lo.Cmp(s.hi)
		if c > 0 || c == 0 && (s.loEx || s.hiEx) {
			return true
		}
	}
	if s.step != nil {
		kmin, kmax := s.kRange()
		if kmin != nil && kmax != nil && kmin.Cmp(kmax) > 0 {
			return true
		}
		if s.fracOnly {
			if s.step.IsInt() {
				return true
			}
			if kmin != nil && kmax != nil && kmin.Cmp(kmax) == 0 {
				return new(big.Rat).Mul(new(big.Rat).SetInt(kmin), s.step).IsInt()
			}
		}
		return false
	}
	if s.fracOnly && s.lo != nil && s.hi != nil && s.lo.Cmp(s.hi) == 0 {
		return s.lo.IsInt()
	}
	return false
}

func (s numSet) holds(x *big.Rat) bool {
	if s.lo != nil {
		c := x.Cmp(s.lo)
		if c < 0 || c == 0 && s.loEx {
			return false
		}
	}
	if s.hi != nil {
		c := x.Cmp(s.hi)
		if c > 0 || c == 0 && s.hiEx {
			return false
		}
	}
	if s.step != nil && !isMultiple(x, s.step) {
		return false
	}
	if s.integral && !x.IsInt() || s.fracOnly && x.IsInt() {
		return false
	}
	for _, m := range s.notMult {
		if isMultiple(x, m) {
			return false
		}
	}
	for _, e := range s.excluded {
		if x.Cmp(e) == 0 {
			return false
		}
	}
	return true
}

// finitePoints lists the values of a small bounded set (ok false when it is not one).
func (s numSet) finitePoints(limit int64) ([]*big.Rat, bool) {
	if s.step == nil {
		if s.lo != nil && s.hi != nil && s.lo.Cmp(s.hi) == 0 && !s.loEx && !s.hiEx {
			if s.holds(s.lo) {
				return []*big.Rat{s.lo}, true
			}
			return nil, true
		}
		return nil, false
	}
	kmin, kmax := s.kRange()
	if kmin == nil || kmax == nil {
		return nil, false
	}
	n := new(big.Int).Sub(kmax, kmin)
	if n.Sign() < 0 {
		return nil, true
	}
	if !n.IsInt64() || n.Int64() >= limit {
		return nil, false
	}
	var out []*big.Rat
	for k := new(big.Int).Set(kmin); k.Cmp(kmax) <= 0; k.Add(k, big.NewInt(1)) {
		x := new(big.Rat).Mul(new(big.Rat).SetInt(k), s.step)
		if s.holds(x) {
			out = append(out, x)
		}
	}
	return out, true
}

// pick returns up to n values of the set, preferring small, round ones.
func (s numSet) pick(n int) []*big.Rat {
	if s.empty() {
		return nil
	}
	var cands []*big.Rat
	addK := func(k *big.Int) {
		cands = append(cands, new(big.Rat).Mul(new(big.Rat).SetInt(k), s.step))
	}
	if s.step != nil {
		kmin, kmax := s.kRange()
		zero := big.NewInt(0)
		var base *big.Int
		switch {
		case kmin != nil && kmin.Sign() > 0:
			base = kmin
		case kmax != nil && kmax.Sign() < 0:
			base = kmax
		default:
			base = zero
		}
		for d := int64(0); d < 12; d++ {
			for _, k := range []*big.Int{new(big.Int).Add(base, big.NewInt(d)), new(big.Int).Sub(base, big.NewInt(d))} {
				if (kmin == nil || k.Cmp(kmin) >= 0) && (kmax == nil || k.Cmp(kmax) <= 0) {
					addK(k)
				}
			}
		}
		if kmax != nil {
			for d := int64(0); d < 3; d++ {
				k := new(big.Int).Sub(kmax, big.NewInt(d))
				if kmin == nil || k.Cmp(kmin) >= 0 {
					addK(k)
				}
			}
		}
	} else {
		half := big.NewRat(1, 2)
		cands = append(cands, new(big.Rat), half, big.NewRat(3, 2), big.NewRat(-1, 2), ratOne, big.NewRat(-1, 1))
		if s.lo != nil {
			cands = append(cands, s.lo, new(big.Rat).Add(s.lo, half), new(big.Rat).Add(s.lo, ratOne),
				new(big.Rat).Add(s.lo, big.NewRat(1, 1024)), new(big.Rat).Add(s.lo, big.NewRat(1, 1<<20)))
		}
		if s.hi != nil {
			cands = append(cands, s.hi, new(big.Rat).Sub(s.hi, half), new(big.Rat).Sub(s.hi, ratOne),
				new(big.Rat).Sub(s.hi, big.NewRat(1, 1024)), new(big.Rat).Sub(s.hi, big.NewRat(1, 1<<20)))
		}
		if s.lo != nil && s.hi != nil {
			mid := new(big.Rat).Add(s.lo, s.hi)
			mid.Quo(mid, big.NewRat(2, 1))
			cands = append(cands, mid)
			q := new(big.Rat).Sub(s.hi, s.lo)
			for i := 0; i < 6; i++ {
				q.Quo(q, big.NewRat(4, 1))
				cands = append(cands, new(big.Rat).Add(s.lo, q))
			}
		}
	}
	var out []*big.Rat
	seen := map[string]bool{}
	for _, c := range cands {
		if !s.holds(c) || seen[c.RatString()] {
			continue
		}
		if _, ok := ratJSON(c); !ok {
			continue
		}
		seen[c.RatString()] = true
		out = append(out, c)
		if len(out) == n {
			break
		}
	}
	return out
}

// ratJSON writes a rational as a JSON number when it has a finite decimal expansion.
func ratJSON(r *big.Rat) (json.Number, bool) {
	if r.IsInt() {
		return json.Number(r.Num().String()), true
	}
	d := new(big.Int).Set(r.Denom())
	digits := 0
	two, five := big.NewInt(2), big.NewInt(5)
	m := new(big.Int)
	for d.Cmp(ratOne.Num()) != 0 {
		switch {
		case m.Mod(d, two).Sign() == 0:
			d.Quo(d, two)
		case m.Mod(d, five).Sign() == 0:
			d.Quo(d, five)
		default:
			return "", false
		}
		digits++
	}
	s := r.FloatString(digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return json.Number(s), true
}

func numbersJSON(rs []*big.Rat) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		if j, ok := ratJSON(r); ok {
			out = append(out, j)
		}
	}
	return out
}

// numbersJSONAs is numbersJSON for one numeric kind: integral values of tIntX are
// written with a fraction (1.0).
func numbersJSONAs(rs []*big.Rat, tb tmask) []any {
	out := numbersJSON(rs)
	if tb != tIntX {
		return out
	}
	for i, v := range out {
		if j, ok := v.(json.Number); ok && !strings.ContainsAny(string(j), ".eE") {
			out[i] = json.Number(string(j) + ".0")
		}
	}
	return out
}

// numSub compares the numbers of A with a B keyword group, one numeric kind at a time.
// Each B keyword is checked by looking for a value of A that violates it: the violation
// is a synthetic constraint added to A, so values are built inside it, checked with the
// validator, and when none exists that is proven from the intervals.
func (e *engine) numSub(t term, g *plain, at string) []finding {
	var fs []finding
	mask := termTypes(t)
	for _, tb := range []tmask{tInt, tIntX, tFrac} {
		if mask&tb == 0 {
			continue
		}
		if numsOf(t, tb).empty() {
			continue
		}
		viol := func(p *plain, where, why string) {
			p.types = tb
			fs = append(fs, e.violation(withPlain(t, p), where, why)...)
		}
		if g.types&tb == 0 {
			viol(typePlain(tb), at+"/type", "type "+g.types.String()+" refuses "+kindName(tb))
			continue
		}
		if g.hasEnum {
			p := typePlain(tb)
			p.excluded = g.enum
			viol(p, at+"/"+g.kwEnum, "a value outside the allowed values")
		}
		if g.min != nil {
			p := typePlain(tb)
			p.max, p.maxEx = g.min, !g.minEx
			viol(p, at+"/"+g.minKW, "a value below "+g.minKW+" "+ratText(g.min))
		}
		if g.max != nil {
			p := typePlain(tb)
			p.min, p.minEx = g.max, !g.maxEx
			viol(p, at+"/"+g.maxKW, "a value above "+g.maxKW+" "+ratText(g.max))
		}
		for _, m := range g.mult {
			if s := numsOf(t, tb); s.step != nil && isMultiple(s.step, m) {
				continue
			}
			p := typePlain(tb)
			p.notMult = m
			viol(p, at+"/multipleOf", "a value that is not a multiple of "+ratText(m))
		}
	}
	return fs
}

func ratText(r *big.Rat) string {
	if j, ok := ratJSON(r); ok {
		return string(j)
	}
	return r.RatString()
}

func kindName(tb tmask) string {
	switch tb {
	case tInt:
		return "integers"
	case tIntX:
		return "integral numbers written with a fraction (1.0), which draft-04's integer refuses"
	}
	return "numbers with a fractional part"
}
