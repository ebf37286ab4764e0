package replay_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/replay"
)

// fakeDNS answers every A query with ip and every other query with no
// record, over UDP on loopback: a search domain or wildcard record that
// sends a *.localhost name elsewhere.
func fakeDNS(t *testing.T, ip net.IP) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if q := buf[:n]; len(q) > 12 {
				pc.WriteTo(dnsAnswer(q, ip.To4()), from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// dnsAnswer is the response to query q: its question, and one A record of
// ip when it asks for A.
func dnsAnswer(q []byte, ip net.IP) []byte {
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end++ // the root label
	if end+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end:])
	end += 4
	out := append([]byte(nil), q[:end]...)
	out[2] = 0x81 // a response, recursion desired
	out[3] = 0x80 // recursion available, no error
	binary.BigEndian.PutUint16(out[6:], 0)
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], 0)
	if qtype == 1 {
		binary.BigEndian.PutUint16(out[6:], 1)
		out = append(out, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		out = append(out, ip...)
	}
	return out
}

// nonLoopback is an address of this machine that is not loopback (where a
// sandbox the test can see listens), or a documentation address no one
// answers on.
func nonLoopback() net.IP {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.To4()
		}
	}
	return net.IPv4(192, 0, 2, 1).To4()
}

// A *.localhost target passes the name check, but what is dialled is the
// address it resolves to: one that is not loopback is refused before
// anything is sent, unless --allow-target names the host; one that is
// loopback is replayed against.
func TestReplayChecksTheAddressAtDialTime(t *testing.T) {
	t.Parallel()
	ip := nonLoopback()
	var hits atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	remote := httptest.NewUnstartedServer(handler)
	if ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0")); err == nil {
		remote.Listener.Close()
		remote.Listener = ln
	}
	remote.Start()
	t.Cleanup(remote.Close)
	_, port, _ := net.SplitHostPort(remote.Listener.Addr().String())
	target := "http://anything.localhost:" + port
	if err := replay.CheckTarget(target, nil); err != nil {
		t.Fatalf("the name check refuses %s: %v", target, err)
	}
	recorded := `{"refund_id":"re_1"}`
	calls, err := replay.FromLog(strings.NewReader(line(t, map[string]any{"result": json.RawMessage(recorded), "result_hash": replayDigest([]byte(recorded))})), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}

	_, err = replay.Run(context.Background(), replay.Config{Target: target, Resolver: fakeDNS(t, ip)}, calls)
	if !errors.Is(err, replay.ErrTargetUnreachable) || !strings.Contains(err.Error(), "not loopback") || !strings.Contains(err.Error(), ip.String()) {
		t.Fatalf("a name resolving to %s: %v", ip, err)
	}
	if _, err := replay.ProbeKind(context.Background(), target, replay.GuardedClient(nil, fakeDNS(t, ip), 0)); err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("the probe dialled %s: %v", ip, err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached %s", n, ip)
	}

	// Named on purpose, the same host is dialled.
	if ip.String() != "192.0.2.1" {
		rep, err := replay.Run(context.Background(), replay.Config{Target: target, Resolver: fakeDNS(t, ip), AllowTargets: []string{"anything.localhost"}}, calls)
		if err != nil || hits.Load() != 1 || len(rep.Results) != 1 {
			t.Fatalf("an allowed host: %v, %d requests", err, hits.Load())
		}
	}

	// Resolving to loopback, it is this machine.
	local := httptest.NewServer(handler)
	t.Cleanup(local.Close)
	_, lport, _ := net.SplitHostPort(local.Listener.Addr().String())
	before := hits.Load()
	if _, err := replay.Run(context.Background(), replay.Config{Target: "http://anything.localhost:" + lport, Resolver: fakeDNS(t, net.IPv4(127, 0, 0, 1))}, calls); err != nil || hits.Load() != before+1 {
		t.Fatalf("a name resolving to loopback: %v", err)
	}
}
