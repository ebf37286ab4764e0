package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/defaults"
	"github.com/toolgate/toolgate/invoke"
	"github.com/toolgate/toolgate/lockfile"
)

// Defaults of WatchConfig.
const (
	// DefaultCheckInterval is how often every bound server's tools/list is
	// read (besides at start-up, on every new session and on
	// notifications/tools/list_changed).
	DefaultCheckInterval = defaults.UpstreamCheckInterval
	// DefaultPinPoll is how often toolgate.lock is looked at for pins an
	// operator accepted meanwhile (a stat; the pins are read when it changed).
	DefaultPinPoll = 2 * time.Second
	// DefaultStartTimeout bounds the checks at start-up.
	DefaultStartTimeout = 10 * time.Second
	// DefaultMinCheckInterval is the least time between two checks of one
	// server that its notifications/tools/list_changed ask for: the
	// notifications that come meanwhile make one check, when the interval
	// has passed. A server that sends them without pause costs one
	// tools/list per interval.
	DefaultMinCheckInterval = 2 * time.Second
)

// States of a watched tool (Status.State).
const (
	StateUnchecked   = "unchecked"   // no tools/list read yet; the first session checks before any call is sent
	StateOK          = "ok"          // the live definition is the pinned one
	StateCompatible  = "compatible"  // it changed compatibly: logged, counted, served
	StateDrifted     = "drifted"     // it changed in a way that stops the tool
	StateMissing     = "missing"     // the server no longer lists the tool: stopped
	StatePinInvalid  = "pin_invalid" // the pin file is unreadable or disagrees with toolgate.lock: stopped
	StateUnreachable = "unreachable" // the last tools/list failed; the verdict before it stands
)

// WatchConfig is what a Watcher needs.
type WatchConfig struct {
	// Dir is the tools directory: its toolgate.lock and TOOL/upstream.json
	// pins. Required.
	Dir string
	// Bindings are the gateway's bindings; those with MCP set are watched.
	Bindings map[string]invoke.Binding
	// Interval between checks of every server. Default DefaultCheckInterval.
	Interval time.Duration
	// PinPoll is how often toolgate.lock is looked at. Default DefaultPinPoll.
	PinPoll time.Duration
	// MinCheckInterval is the least time between two checks of a server
	// its notifications ask for. Default DefaultMinCheckInterval.
	MinCheckInterval time.Duration
	// Registerer receives toolgate_upstream_drifted{tool_id},
	// toolgate_upstream_changes_total{tool_id,tier} and
	// toolgate_upstream_checks_total{result}. Default: no metrics.
	Registerer prometheus.Registerer
	// Logger receives every change seen, every stop and every failed check
	// (with the attribute tool_id). Default: the pool's.
	Logger *slog.Logger
}

// Status is what the watcher knows of one bound tool.
type Status struct {
	ToolID string `json:"tool_id"`
	Server string `json:"server"` // the server's URL, without credentials
	Tool   string `json:"tool"`   // the tool's name on the server
	State  string `json:"state"`
	// Stopped: new executions answer 503 upstream_drifted; Reason says why.
	Stopped bool   `json:"stopped"`
	Reason  string `json:"reason,omitempty"`
	// Pinned is false for a tool without a pin: drift is then measured from
	// the definition the gateway saw first (trust on first use).
	Pinned     bool      `json:"pinned"`
	PinDigest  string    `json:"pin_digest,omitempty"`
	LiveDigest string    `json:"live_digest,omitempty"`
	Drift      *Drift    `json:"drift,omitempty"`
	CheckedAt  time.Time `json:"checked_at,omitzero"`
	Error      string    `json:"error,omitempty"` // the last check's failure
	// Live is the live definition (canonical JSON), for accept.
	Live json.RawMessage `json:"-"`
}

// Watcher checks the live definitions of the tools bound to upstream MCP
// servers against their pins and stops the ones that drifted. It is safe
// for concurrent use.
type Watcher struct {
	cfg  WatchConfig
	pool *Pool

	mu      sync.Mutex
	tools   map[string]*watched // by tool id
	stamp   string              // toolgate.lock's size and modification time when last read
	lock    *lockfile.Lock
	lockErr error
	// pending are the servers whose notifications/tools/list_changed came
	// since their last check; lastCheck when each was last checked; wake
	// tells Run that one came.
	pending   map[*server]bool
	lastCheck map[*server]time.Time
	wake      chan struct{}

	drifted  *prometheus.GaugeVec
	seen     *prometheus.CounterVec
	checks   *prometheus.CounterVec
	lastLive map[string]string // tool id → the last live digest counted
}

type watched struct {
	id     string
	sv     *server
	name   string
	st     Status
	first  json.RawMessage // unpinned: the definition seen first
	defErr error           // the listed definition could not be read
}

// NewWatcher watches cfg.Bindings' MCP tools through pool's sessions. Every
// new session of a watched server is checked before it serves a call, and a
// server's notifications/tools/list_changed triggers a check.
func NewWatcher(pool *Pool, cfg WatchConfig) (*Watcher, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultCheckInterval
	}
	if cfg.PinPoll <= 0 {
		cfg.PinPoll = DefaultPinPoll
	}
	if cfg.MinCheckInterval <= 0 {
		cfg.MinCheckInterval = DefaultMinCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = pool.cfg.Logger
	}
	w := &Watcher{cfg: cfg, pool: pool, tools: map[string]*watched{}, lastLive: map[string]string{},
		pending: map[*server]bool{}, lastCheck: map[*server]time.Time{}, wake: make(chan struct{}, 1)}
	for id, b := range cfg.Bindings {
		if b.MCP == nil {
			continue
		}
		sv, err := pool.server(b.MCP.URL, b.MCP.Headers)
		if err != nil {
			return nil, fmt.Errorf("binding %s: %w", id, err)
		}
		w.tools[id] = &watched{id: id, sv: sv, name: b.MCP.Tool,
			st: Status{ToolID: id, Server: redactURL(b.MCP.URL), Tool: b.MCP.Tool, State: StateUnchecked}}
	}
	if cfg.Registerer != nil {
		w.drifted = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolgate_upstream_drifted",
			Help: "1 while a tool of an upstream MCP server is stopped because its live definition drifted from its pin (until an operator accepts it), else 0."}, []string{"tool_id"})
		w.seen = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_upstream_changes_total",
			Help: "Changed live definitions of upstream MCP tools, by tool and tier (compatible ones keep serving)."}, []string{"tool_id", "tier"})
		w.checks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_upstream_checks_total",
			Help: "Reads of an upstream MCP server's tools/list, by result (ok, failed)."}, []string{"result"})
		if err := cfg.Registerer.Register(w.drifted); err != nil {
			return nil, err
		}
		if err := cfg.Registerer.Register(w.seen); err != nil {
			return nil, err
		}
		if err := cfg.Registerer.Register(w.checks); err != nil {
			return nil, err
		}
		for id := range w.tools {
			w.drifted.WithLabelValues(id).Set(0)
		}
	}
	pool.onConnect = func(ctx context.Context, sv *server, cs *mcp.ClientSession) {
		w.checking(sv)
		tools, err := listTools(ctx, cs)
		w.apply(sv, tools, err)
	}
	pool.onChange = func(sv *server) {
		w.mu.Lock()
		w.pending[sv] = true
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default: // Run was told already
		}
	}
	w.mu.Lock()
	w.reloadPins()
	for _, t := range w.tools {
		w.evaluate(t)
	}
	w.mu.Unlock()
	return w, nil
}

// Start checks every watched server once (bounded by DefaultStartTimeout);
// a server that cannot be reached is logged and checked again on its first
// session.
func (w *Watcher) Start(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	w.checkAll(ctx)
}

// Run checks on the interval, on notifications (at most one check per
// server per MinCheckInterval, the notifications meanwhile coalesced) and
// when toolgate.lock changed, until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	tick := time.NewTicker(w.cfg.Interval)
	defer tick.Stop()
	poll := time.NewTicker(w.cfg.PinPoll)
	defer poll.Stop()
	later := time.NewTimer(time.Hour)
	later.Stop()
	defer later.Stop()
	notified := func() {
		due, next := w.duePending(time.Now())
		if len(due) > 0 {
			cctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
			var wg sync.WaitGroup
			for _, sv := range due {
				wg.Add(1)
				go func() {
					defer wg.Done()
					w.check(cctx, sv)
				}()
			}
			wg.Wait()
			cancel()
			next = w.nextPending(time.Now())
		}
		later.Stop()
		if next > 0 {
			later.Reset(next)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			cctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
			w.checkAll(cctx)
			cancel()
		case <-w.wake:
			notified()
		case <-later.C:
			notified()
		case <-poll.C:
			w.mu.Lock()
			if w.lockStamp() != w.stamp {
				w.reloadPins()
				for _, t := range w.tools {
					w.evaluate(t)
				}
			}
			w.mu.Unlock()
		}
	}
}

// CheckNow reads every watched server's tools/list now.
func (w *Watcher) CheckNow(ctx context.Context) { w.checkAll(ctx) }

func (w *Watcher) checkAll(ctx context.Context) {
	w.mu.Lock()
	servers := map[*server]bool{}
	for _, t := range w.tools {
		servers[t.sv] = true
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for sv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.check(ctx, sv)
		}()
	}
	wg.Wait()
}

// duePending returns the notified servers whose last check is at least
// MinCheckInterval old (no longer pending: their check is about to start),
// and how long until the next pending one is due (0: none is pending).
func (w *Watcher) duePending(now time.Time) (due []*server, next time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for sv := range w.pending {
		wait := w.lastCheck[sv].Add(w.cfg.MinCheckInterval).Sub(now)
		if wait <= 0 {
			due = append(due, sv)
			delete(w.pending, sv)
			w.lastCheck[sv] = now
			continue
		}
		if next == 0 || wait < next {
			next = wait
		}
	}
	return due, next
}

// nextPending is how long until the next pending server is due (0: none
// is pending; a due one: a moment).
func (w *Watcher) nextPending(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next time.Duration
	for sv := range w.pending {
		wait := max(w.lastCheck[sv].Add(w.cfg.MinCheckInterval).Sub(now), time.Millisecond)
		if next == 0 || wait < next {
			next = wait
		}
	}
	return next
}

// checking notes that a check of sv starts: the notifications before it
// are answered by it.
func (w *Watcher) checking(sv *server) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, sv)
	w.lastCheck[sv] = time.Now()
}

func (w *Watcher) check(ctx context.Context, sv *server) {
	w.checking(sv)
	cs, fresh, err := sv.session(ctx)
	if err != nil {
		w.apply(sv, nil, err)
		return
	}
	if fresh {
		return // the new session was checked by onConnect
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		sv.drop(cs)
	}
	w.apply(sv, tools, err)
}

// apply records a server's tools/list (or why it could not be read) for its
// watched tools.
func (w *Watcher) apply(sv *server, tools []*mcp.Tool, listErr error) {
	if w.checks != nil {
		if listErr != nil {
			w.checks.WithLabelValues("failed").Inc()
		} else {
			w.checks.WithLabelValues("ok").Inc()
		}
	}
	byName := map[string]*mcp.Tool{}
	for _, t := range tools {
		byName[t.Name] = t
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lockStamp() != w.stamp {
		w.reloadPins()
	}
	now := w.pool.cfg.Now().UTC()
	for _, t := range w.tools {
		if t.sv != sv {
			continue
		}
		if listErr != nil {
			t.st.Error = sv.secrets.Scrub(listErr.Error())
			if t.st.State == StateUnchecked || t.st.State == StateUnreachable {
				t.st.State = StateUnreachable
			}
			w.cfg.Logger.Warn(fmt.Sprintf("upstream %s: cannot read the tools of %s", t.id, t.st.Server), "tool_id", t.id, "error", t.st.Error)
			continue
		}
		t.st.Error, t.st.CheckedAt, t.defErr = "", now, nil
		if lt, ok := byName[t.name]; ok {
			def, err := Definition(lt)
			if err != nil {
				t.st.Live, t.st.LiveDigest, t.defErr = nil, "", err
			} else {
				t.st.Live = def
				t.st.LiveDigest = lockfile.Digest(def)
				if t.first == nil {
					t.first = def
				}
			}
		} else {
			t.st.Live, t.st.LiveDigest = nil, ""
		}
		w.evaluate(t)
	}
}

// reloadPins reads toolgate.lock and each watched tool's pin file. Called
// with w.mu held.
func (w *Watcher) reloadPins() {
	w.stamp = w.lockStamp()
	w.lock, w.lockErr = lockfile.Read(w.cfg.Dir)
}

func (w *Watcher) lockStamp() string {
	fi, err := os.Stat(filepath.Join(w.cfg.Dir, lockfile.FileName))
	if err != nil {
		return "none"
	}
	return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano())
}

// evaluate derives a tool's verdict from its pin and its live definition.
// Called with w.mu held.
func (w *Watcher) evaluate(t *watched) {
	st := &t.st
	prevStopped := st.Stopped
	st.Stopped, st.Reason, st.Drift = false, "", nil
	var pin *lockfile.Pin
	var pinErr error
	if w.lockErr != nil {
		pinErr = w.lockErr
	} else {
		pin, pinErr = lockfile.CheckPin(w.cfg.Dir, t.id, w.lock)
		if pinErr == nil && pin != nil && (pin.Source.Kind != lockfile.SourceMCP || pin.Source.Tool != t.name) {
			pinErr = fmt.Errorf("%s pins %s %q, but the binding calls the MCP tool %q", filepath.Join(t.id, lockfile.PinFileName), pin.Source.Kind, pin.Source.Tool, t.name)
		}
	}
	st.Pinned = pin != nil
	st.PinDigest = ""
	if pin != nil {
		st.PinDigest = pin.Digest()
	}
	switch {
	case pinErr != nil:
		st.State, st.Stopped = StatePinInvalid, true
		st.Reason = pinErr.Error()
	case st.CheckedAt.IsZero():
		if st.State != StateUnreachable {
			st.State = StateUnchecked
		}
	case t.defErr != nil:
		st.State, st.Stopped = StateDrifted, true
		st.Reason = "its live definition cannot be read: " + t.defErr.Error()
	case st.Live == nil:
		st.State, st.Stopped = StateMissing, true
		st.Reason = fmt.Sprintf("the server %s no longer lists the tool %q", st.Server, t.name)
	default:
		base := t.first
		if pin != nil {
			base = pin.Definition
		}
		d, err := Compare(base, st.Live)
		switch {
		case err != nil:
			st.State, st.Stopped = StateDrifted, true
			st.Reason = "its definitions cannot be compared: " + err.Error()
		case !d.Changed():
			st.State = StateOK
		case d.Stops:
			st.State, st.Stopped, st.Drift = StateDrifted, true, &d
			st.Reason = fmt.Sprintf("the live definition of %q on %s drifted from the pinned one (%s)", t.name, st.Server, d.Summary())
		default:
			st.State, st.Drift = StateCompatible, &d
		}
		w.noteChange(t, d, err)
	}
	if !st.Pinned && !st.Stopped && st.State != StateUnchecked && st.Reason == "" {
		st.Reason = "not pinned in " + lockfile.FileName + ": drift is measured from the definition this gateway saw first; pin it with toolgate upstream accept --tool " + t.id
	}
	st.Reason = t.sv.secrets.Scrub(st.Reason) // a definition may repeat a credential
	if st.Stopped && !prevStopped {
		w.cfg.Logger.Error(fmt.Sprintf("upstream %s: STOPPED (503 upstream_drifted): %s; review with toolgate upstream diff and accept with toolgate upstream accept --tool %s", t.id, st.Reason, t.id), "tool_id", t.id, "state", st.State)
	}
	if !st.Stopped && prevStopped {
		w.cfg.Logger.Info(fmt.Sprintf("upstream %s: serving again (%s)", t.id, st.State), "tool_id", t.id, "state", st.State)
	}
	if w.drifted != nil {
		v := 0.0
		if st.Stopped {
			v = 1
		}
		w.drifted.WithLabelValues(t.id).Set(v)
	}
}

// noteChange logs and counts a live definition the first time it is seen.
func (w *Watcher) noteChange(t *watched, d Drift, err error) {
	if err != nil || t.st.LiveDigest == "" || w.lastLive[t.id] == t.st.LiveDigest {
		return
	}
	first := w.lastLive[t.id] == ""
	w.lastLive[t.id] = t.st.LiveDigest
	if first && !d.Changed() {
		return
	}
	tier := string(d.Tier)
	if len(d.Changes) == 0 {
		tier = "compatible"
	}
	if w.seen != nil && d.Changed() {
		w.seen.WithLabelValues(t.id, tier).Inc()
	}
	if d.Changed() && !d.Stops {
		w.cfg.Logger.Info(fmt.Sprintf("upstream %s: the live definition of %q changed compatibly (%s); still serving", t.id, t.name, t.sv.secrets.Scrub(d.Summary())), "tool_id", t.id, "tier", tier)
	}
}

// Drift says why a tool is stopped ("" when it may be called): the
// toolcall.Config.Drift of the gateway.
func (w *Watcher) Drift(toolID string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.tools[toolID]; ok && t.st.Stopped {
		return t.st.Reason
	}
	return ""
}

// stoppedUpstream says why a server's tool is stopped for any tool bound to
// it: the invoker's last guard after a new session was checked.
func (w *Watcher) stoppedUpstream(url, tool string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.tools {
		if t.sv.url == url && t.name == tool && t.st.Stopped {
			return t.st.Reason
		}
	}
	return ""
}

// Guard makes inv refuse to send a call to a tool this watcher stopped
// (after a reconnection's check, before the admission knew of it).
func (w *Watcher) Guard(inv *Invoker) { inv.stopped = w.stoppedUpstream }

// Statuses lists every watched tool, sorted by tool id.
func (w *Watcher) Statuses() []Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Status, 0, len(w.tools))
	for _, t := range w.tools {
		out = append(out, t.st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ToolID < out[j].ToolID })
	return out
}

// ReadyLines are /readyz's lines about upstream tools: every one that is
// stopped, unpinned, unchecked or unreachable.
func (w *Watcher) ReadyLines() []string {
	var out []string
	for _, s := range w.Statuses() {
		switch {
		case s.Stopped:
			out = append(out, fmt.Sprintf("upstream %s: stopped (%s): %s", s.ToolID, s.State, s.Reason))
		case s.State == StateUnchecked || s.State == StateUnreachable:
			out = append(out, fmt.Sprintf("upstream %s: %s: %s", s.ToolID, s.State, orText(s.Error, "checked on its first call")))
		case s.Error != "":
			out = append(out, fmt.Sprintf("upstream %s: %s as last seen; the last check failed: %s", s.ToolID, s.State, s.Error))
		case !s.Pinned:
			out = append(out, fmt.Sprintf("upstream %s: unpinned: %s", s.ToolID, s.Reason))
		}
	}
	return out
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
