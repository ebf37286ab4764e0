package harness

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Faults are the per-request fault rates of the proxy between the gateways
// and the downstream. Rates are probabilities in [0, 1] and apply to the
// effectful request (POST /refunds, or /form/refunds) only; lookups see latency and partitions.
type Faults struct {
	// MaxLatency is the upper bound of a uniform random delay added to every
	// forwarded request, before it is forwarded.
	MaxLatency time.Duration
	// ResetBefore: the connection is reset after the gateway wrote the
	// request and before it is forwarded: no effect, and the gateway cannot
	// tell (outcome unknown).
	ResetBefore float64
	// ResetAfter: the request is forwarded (the effect happens) and the
	// connection is reset instead of answering.
	ResetAfter float64
	// Late: the request is forwarded only after LateBy, whether or not the
	// gateway still waits (it lands after the gateway gave up).
	Late   float64
	LateBy time.Duration
	// Unavailable: the proxy answers 503 without forwarding, a status the
	// harness lists in not_started_statuses (the action goes back to pending
	// and the client retries, racing its duplicate for the claim).
	Unavailable float64
}

// ProxyStats counts what the proxy did.
type ProxyStats struct {
	Forwarded, ResetsBefore, ResetsAfter, Late, Blackholed, Unavailable int64
}

// Proxy is an in-process fault-injecting HTTP proxy in front of one
// downstream. Each gateway replica gets its own Port, so a partition can cut
// one replica off while the others still reach the downstream.
type Proxy struct {
	target string // base URL of the downstream
	client *http.Client

	mu     sync.Mutex
	faults Faults
	rng    *rand.Rand

	forwarded, resetsBefore, resetsAfter, late, blackholed, unavailable atomic.Int64
}

// NewProxy makes a proxy to the downstream at target ("http://host:port").
func NewProxy(target string, seed uint64) *Proxy {
	return &Proxy{
		target: target,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// SetFaults replaces the fault rates; the zero Faults turns faults off.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Stats returns the counters so far.
func (p *Proxy) Stats() ProxyStats {
	return ProxyStats{Forwarded: p.forwarded.Load(), ResetsBefore: p.resetsBefore.Load(),
		ResetsAfter: p.resetsAfter.Load(), Late: p.late.Load(), Blackholed: p.blackholed.Load(),
		Unavailable: p.unavailable.Load()}
}

type decision struct {
	latency                 time.Duration
	resetBefore, resetAfter bool
	unavailable             bool
	lateBy                  time.Duration
}

func (p *Proxy) decide(effectful bool) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	var d decision
	if f.MaxLatency > 0 {
		d.latency = time.Duration(p.rng.Int64N(int64(f.MaxLatency)))
	}
	if !effectful {
		return d
	}
	switch x := p.rng.Float64(); {
	case x < f.ResetBefore:
		d.resetBefore = true
	case x < f.ResetBefore+f.ResetAfter:
		d.resetAfter = true
	case x < f.ResetBefore+f.ResetAfter+f.Late:
		d.lateBy = f.LateBy
	case x < f.ResetBefore+f.ResetAfter+f.Late+f.Unavailable:
		d.unavailable = true
	}
	return d
}

// Port is one listening side of the proxy, used by one replica.
type Port struct {
	p   *Proxy
	ln  net.Listener
	srv *http.Server

	mu        sync.Mutex
	partition chan struct{} // non-nil while partitioned; closed when healed
}

// Listen opens a new port on 127.0.0.1.
func (p *Proxy) Listen() (*Port, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	pt := &Port{p: p, ln: ln}
	pt.srv = &http.Server{Handler: pt}
	go pt.srv.Serve(ln)
	return pt, nil
}

// URL is the port's base URL.
func (pt *Port) URL() string { return "http://" + pt.ln.Addr().String() }

// Close stops the port.
func (pt *Port) Close() error {
	pt.Heal()
	return pt.srv.Close()
}

// Partition makes the port a blackhole: requests are accepted and hang,
// unforwarded, until the gateway gives up or Heal is called; then their
// connections are reset. Nothing that arrived during a partition is ever
// forwarded.
func (pt *Port) Partition() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.partition == nil {
		pt.partition = make(chan struct{})
	}
}

// Heal ends a partition.
func (pt *Port) Heal() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.partition != nil {
		close(pt.partition)
		pt.partition = nil
	}
}

func (pt *Port) partitioned() chan struct{} {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.partition
}

func (pt *Port) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := pt.p
	body, err := io.ReadAll(r.Body) // the whole request was written by the gateway
	if err != nil {
		reset(w)
		return
	}
	if ch := pt.partitioned(); ch != nil {
		p.blackholed.Add(1)
		select {
		case <-ch:
		case <-r.Context().Done():
		}
		reset(w)
		return
	}
	d := p.decide(r.Method == http.MethodPost && (r.URL.Path == "/refunds" || r.URL.Path == "/form/refunds"))
	// The latency comes first, whatever the request's fate: a reset or a 503
	// also takes its time. What was sent is delivered even if the gateway
	// stops waiting: the network does not take a request back.
	time.Sleep(d.latency)
	if d.resetBefore {
		p.resetsBefore.Add(1)
		reset(w)
		return
	}
	if d.unavailable {
		p.unavailable.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"code":"HARNESS_UNAVAILABLE","message":"not forwarded"}`))
		return
	}
	if d.lateBy > 0 {
		p.late.Add(1)
		time.Sleep(d.lateBy)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		reset(w)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := p.client.Do(out)
	if err != nil {
		reset(w)
		return
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.forwarded.Add(1)
	if err != nil || d.resetAfter {
		if d.resetAfter {
			p.resetsAfter.Add(1)
		}
		reset(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(rb)
}

// reset closes the client's connection with a TCP RST and no answer.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
