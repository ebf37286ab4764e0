package contract

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// JSONLines maps each JSON pointer in a document to the 1-based line where it starts: the
// line of its key inside an object, of its first token inside an array. Malformed input
// yields the pointers read before the error.
func JSONLines(data []byte) map[string]int {
	var nl []int
	for i, c := range data {
		if c == '\n' {
			nl = append(nl, i)
		}
	}
	lines := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lineAt := func() int {
		off := int(dec.InputOffset())
		// the token just read ends at off; count newlines strictly before it
		return 1 + sort.SearchInts(nl, off)
	}
	var walk func(ptr string) bool
	walk = func(ptr string) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if _, seen := lines[ptr]; !seen {
			lines[ptr] = lineAt()
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return false
				}
				key, _ := k.(string)
				child := ptr + "/" + escapePointer(key)
				lines[child] = lineAt()
				if !walk(child) {
					return false
				}
			}
			_, err = dec.Token()
			return err == nil
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if !walk(ptr + "/" + strconv.Itoa(i)) {
					return false
				}
			}
			_, err = dec.Token()
			return err == nil
		}
		return true
	}
	walk("")
	return lines
}

// lineOf returns the line of ptr, or of its nearest ancestor that has one, or 0.
func lineOf(lines map[string]int, ptr string) int {
	for {
		if l, ok := lines[ptr]; ok {
			return l
		}
		i := len(ptr) - 1
		for i >= 0 && ptr[i] != '/' {
			i--
		}
		if i < 0 {
			return 0
		}
		ptr = ptr[:i]
	}
}
