// Package replay proves that recorded tool calls are deterministic: it sends
// every executed call again, with the same downstream key and the same
// payload, to a sandbox copy of its downstream (or to a toolgate gateway in
// front of one) and compares the answer with the recorded status and body,
// byte for byte or as canonical JSON. Its inputs come from a decision log
// written with arguments: full (FromLog) or from a ledger (FromLedger); Run
// sends and judges them, Write prints the report. See docs/replay.md.
//
// With the key, the input and the recorded response, a replay against a
// sandbox proves determinism. Without the key, or against production, it is
// just a second refund: CheckTarget refuses any target that is not on this
// machine unless the caller names it.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/invoke"
)

// Verdict is what a replay proved about one recorded call.
type Verdict string

// The verdicts.
const (
	// Deterministic: the target answered the recorded status and body.
	Deterministic Verdict = "deterministic"
	// Differs: the target answered another status or body (the first
	// difference is reported), or no answer at all.
	Differs Verdict = "differs"
	// NotReplayable: the record lacks what a replay needs (its arguments were
	// masked, erased or not logged; it has no recorded response; no binding
	// says where it went). Nothing was sent.
	NotReplayable Verdict = "not_replayable"
	// Skipped: the record is not an execution to prove (a replay or join of
	// one, a conflict, an invalid or denied call, a read-only call).
	// Nothing was sent.
	Skipped Verdict = "skipped"
)

// Kind says what the target is.
type Kind string

// Target kinds.
const (
	// KindAuto probes the target (ProbeKind) and picks one of the others.
	KindAuto Kind = "auto"
	// KindDownstream: the target is a sandbox copy of the tools' downstream;
	// each call goes to its binding's path on the target's host, with the
	// binding's method and the downstream key in the binding's header.
	KindDownstream Kind = "downstream"
	// KindGateway: the target is a toolgate gateway (with a fresh ledger) in
	// front of a sandbox; each call is a one-shot call with the recorded
	// action id as its Idempotency-Key, and the gateway's bindings decide
	// where it goes.
	KindGateway Kind = "gateway"
)

// Compare is how answers are compared.
type Compare string

// Comparison modes.
const (
	// CompareBytes: status and body byte for byte (the body's SHA-256 when
	// the record keeps only that). A difference is located as a JSON pointer
	// when both bodies are JSON.
	CompareBytes Compare = "bytes"
	// CompareJSON: status, and bodies as RFC 8785 canonical JSON (key order,
	// spacing and number spelling do not count). A body that is not JSON is
	// compared byte for byte.
	CompareJSON Compare = "json"
)

// DefaultTimeout bounds each replayed call (Config.Timeout).
const DefaultTimeout = 10 * time.Second

// DefaultMaxBodyBytes caps how much of a replayed answer is read.
const DefaultMaxBodyBytes = 16 << 20

// Call is one recorded call, from a decision-log line or a ledger action.
type Call struct {
	// Source names the record for the report: "line 12", "ledger acme/refund-1".
	Source string
	// At is when the call was received (log) or last sent (ledger).
	At                     time.Time
	Tenant, ActionID       string
	ToolID, Version        string
	Arguments              json.RawMessage // as recorded
	InputHash              string          // sha256:<hex> of the canonical arguments; "" skips the check
	Status                 int             // the recorded status
	Body                   []byte          // the recorded body (see BodyExact); nil when not recorded
	BodyExact              bool            // Body is the bytes as answered (a ledger); else the log's JSON, re-encoded
	BodyHash               string          // sha256:<hex> of the body bytes as answered; "" when unknown
	BodyMasked             []string        // pointers into Body whose recorded value is not the answered one
	Binding                *invoke.Binding // how the call was sent (the log's downstream record); nil when unknown
	Verdict                Verdict         // set by the source for a record it judged already (skipped, not replayable)
	Reason, Field, Related string          // why; the masked field; a related record ("line 9")
	ContentType            string          // the recorded body's type, when known
}

// Config is one replay run. Target is required; every other field has the
// default its comment names.
type Config struct {
	// Target is the base URL replayed calls go to. Check it with CheckTarget
	// first.
	Target string
	// Kind of the target. Default KindDownstream (KindAuto must be resolved
	// with ProbeKind before Run).
	Kind Kind
	// Compare mode. Default CompareBytes.
	Compare Compare
	// Bindings fill in how to reach a tool for calls whose record names no
	// downstream request (a ledger, or an old log): their URLs' scheme and
	// host are replaced by the target's, as for recorded ones.
	Bindings map[string]invoke.Binding
	// Key is the bearer key for a KindGateway target ("" for none).
	Key string
	// Timeout bounds each call. Default DefaultTimeout.
	Timeout time.Duration
	// Client sends the calls, exactly once each. Default an invoke.Client
	// reading answers up to DefaultMaxBodyBytes over GuardedClient(
	// AllowTargets, Resolver): every connection goes to a loopback address
	// unless its host is allowed.
	Client *invoke.Client
	// AllowTargets are the hosts (or host:port) that may be dialled though
	// not loopback (--allow-target).
	AllowTargets []string
	// Resolver resolves the target's name at dial time. Default
	// net.DefaultResolver.
	Resolver *net.Resolver
}

// Result is the verdict on one recorded call.
type Result struct {
	Source         string      `json:"source"`
	Tenant         string      `json:"tenant,omitempty"`
	ActionID       string      `json:"action_id,omitempty"`
	ToolID         string      `json:"tool_id,omitempty"`
	Version        string      `json:"version,omitempty"`
	Verdict        Verdict     `json:"verdict"`
	Reason         string      `json:"reason,omitempty"`  // why not replayable or skipped
	Field          string      `json:"field,omitempty"`   // the masked or erased argument that makes it not replayable
	Related        string      `json:"related,omitempty"` // the record this one defers to ("line 9")
	RecordedStatus int         `json:"recorded_status,omitempty"`
	ReplayedStatus int         `json:"replayed_status,omitempty"`
	Difference     *Difference `json:"difference,omitempty"`
}

// Difference is the first difference between a recorded and a replayed
// answer: in the status, or in the body at a JSON pointer, with both values
// (a value absent on one side is omitted there, and Detail says so).
type Difference struct {
	In       string          `json:"in"` // "status" or "body"
	Pointer  string          `json:"pointer"`
	Recorded json.RawMessage `json:"recorded,omitempty"`
	Replayed json.RawMessage `json:"replayed,omitempty"`
	Detail   string          `json:"detail,omitempty"`
}

// Report is a replay run: what was replayed where, the counts, the decision
// and every record's verdict in record order.
type Report struct {
	Source        string   `json:"source"`
	Target        string   `json:"target"`
	TargetKind    Kind     `json:"target_kind"`
	Compare       Compare  `json:"compare"`
	Total         int      `json:"total"` // executed calls judged: deterministic + differs + not replayable
	Deterministic int      `json:"deterministic"`
	Differs       int      `json:"differs"`
	NotReplayable int      `json:"not_replayable"`
	Skipped       int      `json:"skipped"`
	Decision      string   `json:"decision"`
	Results       []Result `json:"results"`
}

// Failed reports whether any call differs (the command exits 1).
func (r *Report) Failed() bool { return r.Differs > 0 }

// ErrTargetUnreachable is Run's error when the target could not be reached
// at all (nothing was sent): a wrong URL, not a verdict.
var ErrTargetUnreachable = errors.New("replay: the target could not be reached")

// Run replays calls in order, one at a time (a downstream's answers may
// depend on what came before: a balance, a counter), and judges each. It
// returns an error only for an unusable configuration or a target that
// cannot be reached at all.
func Run(ctx context.Context, cfg Config, calls []Call) (*Report, error) {
	if cfg.Kind == "" {
		cfg.Kind = KindDownstream
	}
	if cfg.Compare == "" {
		cfg.Compare = CompareBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &invoke.Client{MaxBodyBytes: DefaultMaxBodyBytes, HTTP: GuardedClient(cfg.AllowTargets, cfg.Resolver, 0)}
	}
	if cfg.Kind != KindDownstream && cfg.Kind != KindGateway {
		return nil, fmt.Errorf("replay: target kind %q is not downstream or gateway", cfg.Kind)
	}
	if cfg.Compare != CompareBytes && cfg.Compare != CompareJSON {
		return nil, fmt.Errorf("replay: compare %q is not bytes or json", cfg.Compare)
	}
	target, err := parseTarget(cfg.Target)
	if err != nil {
		return nil, err
	}
	rep := &Report{Target: cfg.Target, TargetKind: cfg.Kind, Compare: cfg.Compare, Results: []Result{}}
	for i := range calls {
		c := &calls[i]
		res := Result{Source: c.Source, Tenant: c.Tenant, ActionID: c.ActionID, ToolID: c.ToolID, Version: c.Version,
			Verdict: c.Verdict, Reason: c.Reason, Field: c.Field, Related: c.Related}
		if res.Verdict == "" {
			res.RecordedStatus = c.Status
			if err := replayOne(ctx, cfg, target, c, &res); err != nil {
				return nil, err
			}
		}
		rep.add(res)
	}
	rep.decide()
	return rep, nil
}

func (r *Report) add(res Result) {
	switch res.Verdict {
	case Deterministic:
		r.Deterministic++
	case Differs:
		r.Differs++
	case NotReplayable:
		r.NotReplayable++
	default:
		r.Skipped++
	}
	r.Results = append(r.Results, res)
}

// decide sets Total and the Decision line.
func (r *Report) decide() {
	r.Total = r.Deterministic + r.Differs + r.NotReplayable
	switch {
	case r.Differs > 0:
		r.Decision = fmt.Sprintf("differs: %d of %d calls answered differently", r.Differs, r.Total)
	case r.Total == 0:
		r.Decision = "nothing to replay: no executed call in the records"
	case r.Deterministic == r.Total:
		r.Decision = "deterministic"
	case r.Deterministic > 0:
		r.Decision = fmt.Sprintf("deterministic where replayable: %d of %d calls not replayable", r.NotReplayable, r.Total)
	default:
		r.Decision = fmt.Sprintf("not proven: none of %s could be replayed", nCount(r.Total, "call", "calls"))
	}
}

// replayOne sends one call and judges the answer into res.
func replayOne(ctx context.Context, cfg Config, target *url.URL, c *Call, res *Result) error {
	notReplayable := func(field, format string, args ...any) error {
		res.Verdict, res.Field, res.Reason = NotReplayable, field, fmt.Sprintf(format, args...)
		return nil
	}
	args, err := canon.Transform(c.Arguments)
	if err != nil {
		return notReplayable("", "the recorded arguments are not JSON: %v", err)
	}
	if c.InputHash != "" && digest(args) != c.InputHash {
		return notReplayable("", "the recorded arguments do not hash to the recorded input_hash %s: they were changed", c.InputHash)
	}
	var decoded map[string]any
	if err := json.Unmarshal(args, &decoded); err != nil {
		return notReplayable("", "the recorded arguments are not a JSON object")
	}
	if cfg.Compare == CompareJSON && c.Body == nil && c.BodyHash != "" {
		return notReplayable("", "--compare json needs the recorded body, and the record keeps only its hash; use --compare bytes")
	}
	if cfg.Compare == CompareJSON && len(c.BodyMasked) > 0 {
		return notReplayable("/result"+c.BodyMasked[0], "the recorded body's %s was masked, so --compare json cannot check it; use --compare bytes (the recorded hash covers it)", c.BodyMasked[0])
	}
	var req invoke.Request
	switch cfg.Kind {
	case KindGateway:
		b, body, err := gatewayRequest(target, c, args, cfg)
		if err != nil {
			return notReplayable("", "%v", err)
		}
		req = invoke.Request{Binding: b, Vars: invoke.Vars{Tenant: c.Tenant, ActionID: c.ActionID}, Body: body}
		if cfg.Key != "" {
			req.Header = http.Header{"Authorization": {"Bearer " + cfg.Key}}
		}
	default:
		b := c.Binding
		if b == nil {
			if cb, ok := cfg.Bindings[c.ToolID]; ok {
				b = &cb
			}
		}
		if b == nil {
			return notReplayable("", "the record names no downstream request for %s; pass --config with its binding, or replay through a gateway", c.ToolID)
		}
		rb := b.WithDefaults()
		rb.URL = rebase(rb.URL, target)
		rb.Timeout = cfg.Timeout
		req = invoke.Request{Binding: &rb, Vars: invoke.Vars{Tenant: c.Tenant, ActionID: c.ActionID, Args: decoded}, Body: args}
	}
	key, err := invoke.DownstreamKey(req.Binding, req.Vars)
	if err != nil {
		return notReplayable("", "the downstream key cannot be made from the record: %v", err)
	}
	if _, err := invoke.Expand(req.Binding.URL, req.Vars, key); err != nil {
		return notReplayable("", "the request URL cannot be made from the record: %v", err)
	}
	got := cfg.Client.Call(ctx, req)
	if got.StatusCode == 0 {
		if !got.Written {
			return fmt.Errorf("%w: %s: %v", ErrTargetUnreachable, c.Source, got.Err)
		}
		res.Verdict = Differs
		res.Difference = &Difference{In: "status", Recorded: json.RawMessage(fmt.Sprint(c.Status)), Detail: "no answer: " + errText(got.Err)}
		return nil
	}
	res.ReplayedStatus = got.StatusCode
	if got.Err != nil { // an answer cut off: its body cannot be compared
		res.Verdict = Differs
		res.Difference = &Difference{In: "body", Detail: "the answer was cut off: " + errText(got.Err)}
		return nil
	}
	if cfg.Kind == KindGateway && got.Header.Get("Idempotent-Replayed") == "true" {
		res.Verdict, res.Reason = Skipped, "the target gateway already had this key and replayed its stored answer, which proves nothing; replay against a gateway with a fresh ledger"
		return nil
	}
	res.Verdict, res.Difference = compare(cfg.Compare, c, got.StatusCode, got.Body)
	return nil
}

// gatewayRequest is a one-shot call of the recorded tool through a toolgate
// gateway: the action id as the Idempotency-Key, the recorded version.
func gatewayRequest(target *url.URL, c *Call, args []byte, cfg Config) (*invoke.Binding, []byte, error) {
	if c.ActionID == "" {
		return nil, nil, errors.New("the record has no action id to use as the Idempotency-Key")
	}
	u := *target
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/tools/" + c.ToolID + "/calls"
	u.RawPath = ""
	body := map[string]any{"arguments": json.RawMessage(args)}
	if c.Version != "" {
		body["version"] = c.Version
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	// The URL has no placeholder; braces in it would be read as one.
	if strings.ContainsAny(u.String(), "{}") {
		return nil, nil, fmt.Errorf("the tool id %q cannot be put in a URL", c.ToolID)
	}
	return &invoke.Binding{URL: u.String(), Method: http.MethodPost, Timeout: cfg.Timeout,
		IdempotencyHeader: "Idempotency-Key", DownstreamKey: "{action_id}"}, raw, nil
}

// rebase puts a binding's URL template on the target: the target's scheme,
// host and path prefix, the template's path and query.
func rebase(tmpl string, target *url.URL) string {
	rest := tmpl
	if _, after, ok := strings.Cut(tmpl, "://"); ok {
		rest = after
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[i:]
		} else {
			rest = ""
		}
	}
	if rest != "" && rest[0] != '/' {
		rest = "/" + rest
	}
	return target.Scheme + "://" + target.Host + strings.TrimSuffix(target.Path, "/") + rest
}

func errText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// nCount is n with the noun in the right number: "1 call", "2 calls".
func nCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
