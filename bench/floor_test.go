package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Records appended before a close are read back after a reopen, in order,
// with the records of the second session after them.
func TestFloorLogSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "floor.log")
	var want []floorEntry
	for session := range 2 {
		l, err := openFloorLog(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			key := fmt.Sprintf("k-%d-%d", session, i)
			claim := floorEntry{Kind: floorClaim, Key: key, Payload: []byte(`{"n":` + fmt.Sprint(i) + `}`)}
			res := floorEntry{Kind: floorResult, Key: key, Status: 201, Payload: []byte(`{"id":"r"}`)}
			for _, e := range []floorEntry{claim, res} {
				if err := l.Append(floorRecord(nil, e.Kind, e.Key, e.Status, e.Payload)); err != nil {
					t.Fatal(err)
				}
				want = append(want, e)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readFloorLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v\nwant %+v", got, want)
	}
	// A torn tail (a crash mid-write) is reported, the records before it kept.
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = readFloorLog(path)
	if err == nil || !strings.Contains(err.Error(), "torn") || len(got) != len(want)-1 {
		t.Fatalf("torn log: %d records, err %v", len(got), err)
	}
}

// The log syncs with the real fdatasync, and Append returns only after a sync
// that covered its record: not while the sync is still running.
func TestFloorLogAppendWaitsForSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openFloorLog(filepath.Join(dir, "floor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if reflect.ValueOf(l.sync).Pointer() != reflect.ValueOf(datasync).Pointer() {
		t.Fatal("the log does not sync with datasync")
	}
	// datasync really reaches the file: it fails on a closed one.
	f, err := os.Create(filepath.Join(dir, "closed"))
	if err != nil {
		t.Fatal(err)
	}
	if err := datasync(f); err != nil {
		t.Fatalf("datasync of an open file: %v", err)
	}
	f.Close()
	if err := datasync(f); err == nil {
		t.Fatal("datasync of a closed file succeeded")
	}

	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	l.sync = func(f *os.File) error {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		return datasync(f)
	}
	done := make(chan error, 1)
	go func() { done <- l.Append([]byte("claim")) }()
	<-entered
	select {
	case err := <-done:
		t.Fatalf("Append returned (%v) while its sync was still running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || l.Syncs() != 1 {
		t.Fatalf("%d sync calls, %d counted; want 1", calls.Load(), l.Syncs())
	}
}

// A failed sync fails every caller it covered and every later Append: a
// record is never reported durable when it may not be.
func TestFloorLogSyncError(t *testing.T) {
	t.Parallel()
	l, err := openFloorLog(filepath.Join(t.TempDir(), "floor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	boom := errors.New("disk gone")
	l.sync = func(*os.File) error { return boom }
	for range 2 {
		if err := l.Append([]byte("x")); !errors.Is(err, boom) {
			t.Fatalf("Append: %v, want %v", err, boom)
		}
	}
}

// Concurrent appends share syncs: with a sync that takes a few
// milliseconds, 32 writers appending 10 records each need far fewer syncs
// than records, and every record is in the file afterwards.
func TestFloorLogGroupCommit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "floor.log")
	l, err := openFloorLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.sync = func(f *os.File) error {
		time.Sleep(2 * time.Millisecond)
		return datasync(f)
	}
	const writers, each = 32, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := l.Append(floorRecord(nil, floorClaim, fmt.Sprintf("w%d-%d", w, i), 0, nil)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncs := l.Syncs()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs > writers*each/4 {
		t.Errorf("%d syncs for %d records: appends are not batched", syncs, writers*each)
	}
	got, err := readFloorLog(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		seen[e.Key] = true
	}
	if len(got) != writers*each || len(seen) != writers*each {
		t.Fatalf("%d records (%d keys) in the file, want %d", len(got), len(seen), writers*each)
	}
	t.Logf("%d records in %d syncs", writers*each, syncs)
}

// The floor server makes the claim durable before the downstream sees the
// request and the result durable before the client sees the answer, and
// answers what the downstream answered.
func TestFloorServer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "floor.log")
	l, err := openFloorLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var syncs atomic.Int64
	l.sync = func(f *os.File) error { syncs.Add(1); return datasync(f) }
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		recs, err := readFloorLog(path)
		key := r.Header.Get("Idempotency-Key")
		if err != nil || len(recs) == 0 || syncs.Load() == 0 {
			http.Error(w, fmt.Sprintf("claim not durable: %v, %d records, %d syncs", err, len(recs), syncs.Load()), http.StatusTeapot)
			return
		}
		last := recs[len(recs)-1]
		if last.Kind != floorClaim || last.Key != key || !bytes.Equal(last.Payload, body) {
			http.Error(w, fmt.Sprintf("last record %+v is not the claim of %s", last, key), http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"refund":"`+key+`"}`)
	}))
	defer down.Close()
	fs := &floorServer{log: l, client: down.Client(), downstream: down.URL}
	front := httptest.NewServer(fs)
	defer front.Close()
	for i := range 3 {
		key := fmt.Sprintf("key-%d", i)
		req, _ := http.NewRequest(http.MethodPost, front.URL, strings.NewReader(`{"amount":1}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || string(body) != `{"refund":"`+key+`"}` {
			t.Fatalf("answer %d %s", resp.StatusCode, body)
		}
		recs, err := readFloorLog(path)
		if err != nil {
			t.Fatal(err)
		}
		last := recs[len(recs)-1]
		if len(recs) != 2*(i+1) || last.Kind != floorResult || last.Key != key || last.Status != http.StatusCreated || string(last.Payload) != string(body) {
			t.Fatalf("after the answer: %d records, last %+v", len(recs), last)
		}
		if got := syncs.Load(); got != int64(2*(i+1)) {
			t.Fatalf("%d syncs after %d serial calls, want two per call", got, i+1)
		}
	}
	// No key: refused before anything is written.
	resp, err := front.Client().Post(front.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
}
