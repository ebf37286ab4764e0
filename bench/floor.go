package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"sync"
)

// The durable floor: the least any exactly-once gateway must do for a new
// action, built into the bench as a reference (it is not a product feature).
// For each request it appends a claim record (the key and the arguments) to a
// plain file and waits until that record is durable, forwards the request to
// the downstream, appends a result record (the key, the status and the
// downstream's answer) and waits until that one is durable too, then answers.
// Writes are group-committed: whoever finds no sync running writes everything
// appended so far and fdatasyncs it once, and every caller whose record that
// sync covered returns. No validation, no index, no JSON work, no lookup of
// earlier keys: a repeated key is forwarded again (the bench never sends one).

// Record kinds in the floor's log.
const (
	floorClaim  byte = 'C'
	floorResult byte = 'R'
)

// floorHeader is a record's frame: payload length (uint32), CRC-32C of the
// payload (uint32), both little-endian.
const floorHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// floorLog is an append-only file of framed records with group commit.
type floorLog struct {
	f *os.File
	// sync makes everything written to f durable: fdatasync on Linux.
	// Tests wrap it.
	sync func(*os.File) error

	mu       sync.Mutex
	cond     sync.Cond
	buf      []byte // framed records appended since the last sync started
	spare    []byte
	appended uint64 // records appended so far
	synced   uint64 // records known durable
	syncing  bool
	err      error // a failed write or sync: the log is unusable after it
	syncs    int   // syncs run
}

// openFloorLog opens (creating or appending to) the log at path.
func openFloorLog(path string) (*floorLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("bench: open the floor's log: %w", err)
	}
	l := &floorLog{f: f, sync: datasync}
	l.cond.L = &l.mu
	return l, nil
}

// Append frames rec, appends it and returns once it is durable: after a
// write and an fdatasync that covered it, either its own or one a
// concurrent caller ran.
func (l *floorLog) Append(rec []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.buf = binary.LittleEndian.AppendUint32(l.buf, uint32(len(rec)))
	l.buf = binary.LittleEndian.AppendUint32(l.buf, crc32.Checksum(rec, castagnoli))
	l.buf = append(l.buf, rec...)
	l.appended++
	me := l.appended
	for l.synced < me {
		if l.err != nil {
			return l.err
		}
		if l.syncing {
			l.cond.Wait()
			continue
		}
		// Lead: take everything appended so far, write and sync it while
		// the others queue their records behind.
		l.syncing = true
		b, upto := l.buf, l.appended
		l.buf = l.spare[:0]
		l.mu.Unlock()
		_, err := l.f.Write(b)
		if err == nil {
			err = l.sync(l.f)
		}
		l.mu.Lock()
		l.spare = b[:0]
		l.syncing = false
		l.syncs++
		if err != nil {
			l.err = fmt.Errorf("bench: floor log: %w", err)
		} else {
			l.synced = upto
		}
		l.cond.Broadcast()
	}
	return nil
}

// Syncs is how many syncs the log has run.
func (l *floorLog) Syncs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncs
}

func (l *floorLog) Close() error { return l.f.Close() }

// floorRecord encodes one record: kind, key length (uvarint), key, status
// (uvarint; 0 for a claim), payload.
func floorRecord(dst []byte, kind byte, key string, status int, payload []byte) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(status))
	return append(dst, payload...)
}

// floorEntry is a decoded record.
type floorEntry struct {
	Kind    byte
	Key     string
	Status  int
	Payload []byte
}

// readFloorLog reads every record of the log at path back, checking each
// frame's checksum. A torn last frame (a crash mid-write) is an error
// naming its offset.
func readFloorLog(path string) ([]floorEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []floorEntry
	for off := 0; off < len(b); {
		if len(b)-off < floorHeader {
			return out, fmt.Errorf("floor log: torn frame header at offset %d", off)
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		sum := binary.LittleEndian.Uint32(b[off+4:])
		if n > len(b)-off-floorHeader {
			return out, fmt.Errorf("floor log: torn record at offset %d", off)
		}
		rec := b[off+floorHeader : off+floorHeader+n]
		if crc32.Checksum(rec, castagnoli) != sum {
			return out, fmt.Errorf("floor log: bad checksum at offset %d", off)
		}
		e, err := decodeFloorRecord(rec)
		if err != nil {
			return out, fmt.Errorf("floor log: offset %d: %w", off, err)
		}
		out = append(out, e)
		off += floorHeader + n
	}
	return out, nil
}

func decodeFloorRecord(rec []byte) (floorEntry, error) {
	if len(rec) == 0 {
		return floorEntry{}, errors.New("empty record")
	}
	e := floorEntry{Kind: rec[0]}
	rest := rec[1:]
	kl, n := binary.Uvarint(rest)
	if n <= 0 || kl > uint64(len(rest)-n) {
		return e, errors.New("bad key length")
	}
	e.Key, rest = string(rest[n:n+int(kl)]), rest[n+int(kl):]
	st, n := binary.Uvarint(rest)
	if n <= 0 {
		return e, errors.New("bad status")
	}
	e.Status, e.Payload = int(st), bytes.Clone(rest[n:])
	return e, nil
}

// floorMaxBody bounds what the floor reads of a request or an answer.
const floorMaxBody = 1 << 20

// floorServer is the durable floor's HTTP front: POST with an
// Idempotency-Key, forwarded to downstream with the same key.
type floorServer struct {
	log        *floorLog
	client     *http.Client
	downstream string // URL every request is forwarded to
	bufs       sync.Pool
}

func (s *floorServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || r.Method != http.MethodPost {
		http.Error(w, "floor: POST with an Idempotency-Key", http.StatusBadRequest)
		return
	}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	body := bytes.NewBuffer((*bp)[:0])
	if _, err := body.ReadFrom(io.LimitReader(r.Body, floorMaxBody)); err != nil {
		http.Error(w, "floor: read the body", http.StatusBadRequest)
		return
	}
	args := body.Bytes()
	// The claim is durable before anything goes downstream.
	rec := floorRecord(nil, floorClaim, key, 0, args)
	if err := s.log.Append(rec); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, s.downstream, bytes.NewReader(args))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	// The result record reuses the claim's buffer.
	rec = floorRecord(rec[:0], floorResult, key, resp.StatusCode, nil)
	head := len(rec)
	buf := bytes.NewBuffer(rec)
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, floorMaxBody))
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rec = buf.Bytes()
	*bp = body.Bytes()[:0]
	// The result is durable before the answer.
	if err := s.log.Append(rec); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	w.Write(rec[head:])
}
