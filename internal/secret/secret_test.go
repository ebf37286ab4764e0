package secret

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Every written form of a secret is scrubbed, whatever surrounds it.
func TestScrubForms(t *testing.T) {
	t.Parallel()
	const tok = `tok<"en>/é+1 2`
	var s Set
	s.Add("Bearer "+tok, "Basic "+base64.StdEncoding.EncodeToString([]byte("bot:pa55word")), "no")
	s.AddURL("https://u:hunter22@crm.example/mcp?api_key=k3y-value&x=1")
	q, a := strconv.Quote(tok), strconv.QuoteToASCII(tok)
	j, _ := json.Marshal(tok)
	for _, form := range []string{tok, "Bearer " + tok, q, a, string(j), url.QueryEscape(tok), url.PathEscape(tok),
		"pa55word", "bot:pa55word", "hunter22", "k3y-value"} {
		text := "before " + form + " after"
		if got := s.Scrub(text); strings.Contains(got, strings.Trim(form, `"`)) || !strings.Contains(got, Mask) {
			t.Errorf("%q scrubbed to %q", text, got)
		}
	}
	if got := s.Scrub("no news is good news"); got != "no news is good news" {
		t.Errorf("a short value was scrubbed: %q", got)
	}
	var none *Set
	if none.Scrub("x") != "x" || !none.Empty() {
		t.Error("a nil set scrubs")
	}
}
