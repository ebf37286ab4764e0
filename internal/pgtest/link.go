package pgtest

import (
	"net"
	"sync"
)

// link is the network between a standby and its primary: a loopback TCP
// proxy the standby's walreceiver connects through. Stall holds back what
// the primary sends (the standby falls behind, as behind a slow or broken
// network) until Resume; Close drops what it holds, which the standby then
// never receives, as WAL still on a machine that dies.
type link struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	closed  bool
	conns   []net.Conn
}

func newLink(target string) (*link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{target: target, ln: ln}
	l.cond = sync.NewCond(&l.mu)
	go l.accept()
	return l, nil
}

func (l *link) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

func (l *link) accept() {
	for {
		down, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			down.Close()
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			up.Close()
			down.Close()
			return
		}
		l.conns = append(l.conns, up, down)
		l.mu.Unlock()
		go func() { // standby → primary: replies and feedback, never held
			buf := make([]byte, 32<<10)
			for {
				n, err := down.Read(buf)
				if n > 0 {
					if _, werr := up.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			up.Close()
		}()
		go l.forward(up, down)
	}
}

// forward copies primary → standby, holding bytes while stalled. Bytes
// held when the primary's side ends are dropped if the link is stalled
// (they never left the dead machine) and delivered otherwise.
func (l *link) forward(up, down net.Conn) {
	var held [][]byte
	eof := false
	go func() {
		for {
			buf := make([]byte, 32<<10)
			n, err := up.Read(buf)
			l.mu.Lock()
			if n > 0 {
				held = append(held, buf[:n])
			}
			if err != nil {
				eof = true
			}
			l.cond.Broadcast()
			l.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for !l.closed && !eof && (l.stalled || len(held) == 0) {
			l.cond.Wait()
		}
		// Closed; or the primary's side ended; or something to deliver.
		if l.closed || l.stalled || len(held) == 0 {
			down.Close()
			return
		}
		chunk := held[0]
		held = held[1:]
		l.mu.Unlock()
		_, err := down.Write(chunk)
		l.mu.Lock()
		if err != nil {
			up.Close()
			return
		}
	}
}

// stall holds back everything the primary sends from now on.
func (l *link) stall() {
	l.mu.Lock()
	l.stalled = true
	l.mu.Unlock()
}

// resume delivers what was held and forwards again.
func (l *link) resume() {
	l.mu.Lock()
	l.stalled = false
	l.cond.Broadcast()
	l.mu.Unlock()
}

// close stops the link: it drops what it holds and closes every
// connection.
func (l *link) close() {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = nil
	l.cond.Broadcast()
	l.mu.Unlock()
	l.ln.Close()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}
