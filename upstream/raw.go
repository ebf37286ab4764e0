package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// rawResult keeps, for one tools/call, the JSON-RPC result exactly as the
// server wrote it. The SDK decodes a result into Go values (a number into a
// float64, an object into a map), and writing those again rounds big
// numbers, sorts keys and escapes '<'; toolgate answers, stores and replays
// the server's own bytes instead. It travels in the call's context; the
// transport sees the request (for its id) and tees every answer under that
// context (the POST's JSON or event stream, a resumed stream's GET).
type rawResult struct {
	max int64

	mu     sync.Mutex
	id     string // the tools/call's JSON-RPC id, normalized; "" until sent
	result json.RawMessage
}

type rawKey struct{}

// request notes the id of a tools/call request body.
func (c *rawResult) request(body []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == "" {
		c.id = normalizeID(msg.ID)
	}
}

// offer reads one JSON-RPC message of an answer; the result of the
// response to the call's id is kept.
func (c *rawResult) offer(msg []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.Result) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != "" && c.result == nil && normalizeID(m.ID) == c.id {
		c.result = bytes.Clone(m.Result)
	}
}

// get returns the kept result, nil when none was seen.
func (c *rawResult) get() json.RawMessage {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.result
}

// normalizeID makes a JSON-RPC id comparable: a number's digits or a
// string's value, tagged; "" for anything else.
func normalizeID(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return ""
	}
	switch x := v.(type) {
	case json.Number:
		return "n:" + x.String()
	case string:
		return "s:" + x
	}
	return ""
}

// tee returns body reading through to c: a JSON answer is one message
// (read up to max bytes, offered at its end), an event stream is parsed
// event by event.
func (c *rawResult) tee(body io.ReadCloser, eventStream bool) io.ReadCloser {
	t := &teeBody{r: body, c: c}
	if eventStream {
		t.sse = &sseScanner{max: int(c.max), emit: c.offer}
	}
	return t
}

type teeBody struct {
	r       io.ReadCloser
	c       *rawResult
	sse     *sseScanner
	buf     []byte
	over    bool
	offered bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if t.sse != nil {
		t.sse.write(p[:n])
		if err == io.EOF {
			t.sse.write([]byte("\n\n")) // a stream may end without the blank line after its last event
		}
		return n, err
	}
	if !t.over {
		if int64(len(t.buf)+n) > t.c.max {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p[:n]...)
		}
	}
	if err == io.EOF && !t.over && !t.offered {
		t.offered = true
		t.c.offer(t.buf)
	}
	return n, err
}

func (t *teeBody) Close() error { return t.r.Close() }

// sseScanner splits a text/event-stream into its events' data, each at
// most max bytes (a longer event is skipped).
type sseScanner struct {
	max      int
	emit     func([]byte)
	line     []byte
	lineOver bool // the current line is over max
	data     []byte
	has      bool // a data field was seen in this event
	skip     bool // this event is over max
}

func (s *sseScanner) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.appendLine(p)
			return
		}
		s.appendLine(p[:i])
		p = p[i+1:]
		s.endLine()
	}
}

func (s *sseScanner) appendLine(b []byte) {
	if s.lineOver {
		return
	}
	if len(s.line)+len(b) > s.max+1 {
		s.lineOver, s.line = true, nil
		return
	}
	s.line = append(s.line, b...)
}

func (s *sseScanner) endLine() {
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	s.line = s.line[:0]
	if s.lineOver {
		s.lineOver, s.skip, s.data, s.has = false, true, nil, false
		return
	}
	if len(line) == 0 { // the end of an event
		if s.has && !s.skip {
			s.emit(s.data)
		}
		s.data, s.has, s.skip = s.data[:0], false, false
		return
	}
	if s.skip {
		return
	}
	v, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		if !bytes.Equal(line, []byte("data")) {
			return // event, id, retry and comments carry no data
		}
		v = nil
	}
	v = bytes.TrimPrefix(v, []byte(" "))
	if s.has {
		s.data = append(s.data, '\n')
	}
	if len(s.data)+len(v) > s.max {
		s.skip, s.data, s.has = true, nil, false
		return
	}
	s.data = append(s.data, v...)
	s.has = true
}
