package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/ledger"
)

func init() {
	register(command{Name: "actions", Summary: "operator client: list, show, reconcile, resolve, approve, deny, assign actions", Run: runActions})
}

// Environment variables the actions command reads when its flags are not given.
const (
	envGatewayURL = "TOOLGATE_URL"
	envGatewayKey = "TOOLGATE_KEY"
	defaultURL    = "http://127.0.0.1:8080"
)

// actionsSub is one subcommand of `toolgate actions`.
type actionsSub struct {
	name, synopsis, summary string
	run                     func(ctx context.Context, e env, args []string) int
}

func actionsSubs() []actionsSub {
	return []actionsSub{
		{"list", "[--state S] [--tool ID] [--policy-version V] [--correlation-id C] [--limit N] [--cursor C] [--all] [--format text|json]", "list the tenant's actions, newest first", actionsList},
		{"show", "ID [--format text|json]", "one action with its history", actionsShow},
		{"reconcile", "ID [--format text|json]", "run the downstream lookup of an unknown action now", actionsReconcile},
		{"resolve", "ID --outcome succeeded|rejected|not_started --note TEXT [--result-status N --result-body JSON]", "settle an unknown (or exhausted pending) action by hand", actionsResolve},
		{"approve", "ID [--note TEXT]", "release an action awaiting approval (it runs at once)", actionsApprove},
		{"deny", "ID [--note TEXT]", "refuse an action awaiting approval (terminal rejected)", actionsDeny},
		{"assign", "ID [--assignee NAME] [--note TEXT] [--take-over]", "take an unknown action or one awaiting approval (information, not a lock)", actionsAssign},
		{"unassign", "ID [--note TEXT] [--take-over]", "release an action's assignment", actionsUnassign},
	}
}

func runActions(ctx context.Context, e env) int {
	subs := actionsSubs()
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return dispatch(e, "actions", names, func(w io.Writer) { actionsUsage(w, subs) }, func(i int, args []string) int {
		return subs[i].run(ctx, e, args)
	})
}

func actionsUsage(w io.Writer, subs []actionsSub) {
	fmt.Fprintln(w, "Usage: toolgate actions <subcommand> [flags]")
	fmt.Fprintln(w, "\nThe operator client of a running gateway. The address comes from --gateway or")
	fmt.Fprintf(w, "$%s, else the listen of ./toolgate.yaml (or --config), else %s; the API key from\n--key or $%s.\n\nSubcommands:\n", envGatewayURL, defaultURL, envGatewayKey)
	for _, s := range subs {
		fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
	}
	fmt.Fprintln(w, "\nExit codes: 0 done; 1 the gateway refused (its problem code on stderr); 2 usage,\nan unreachable gateway or a gateway error (5xx).")
	fmt.Fprintln(w, "Run 'toolgate actions <subcommand> --help' for its flags.")
}

// conn holds the flags every actions subcommand shares.
type conn struct {
	name    string
	command string // the command it belongs to: "actions" unless set
	gateway *string
	key     *string
	timeout *time.Duration
	format  *string
	config  *string // operator_config.go
	from    string  // where the gateway's address came from
}

// newActionsFlags returns the subcommand's FlagSet with the shared flags.
func newActionsFlags(e env, name, synopsis string) (*flag.FlagSet, *conn) {
	fs := newFlagSet(e, "actions "+name, synopsis)
	c := &conn{name: name}
	c.gateway = fs.String("gateway", "", "gateway base URL (default $"+envGatewayURL+", else the listen of ./toolgate.yaml, else "+defaultURL+")")
	c.config = fs.String("config", "", "the gateway's `toolgate.yaml`, for its listen address (default ./toolgate.yaml when present)")
	c.key = fs.String("key", "", "API key, sent as a bearer token (default $"+envGatewayKey+"); never printed")
	c.timeout = fs.Duration("timeout", 60*time.Second, "give up on the gateway after this long")
	c.format = fs.String("format", "text", "output: text (for people) or json (for scripts)")
	return fs, c
}

// parse parses args and checks the shared flags and the number of positional
// arguments. It returns ok=false with the exit code when the command must stop.
func (c *conn) parse(e env, fs *flag.FlagSet, args []string, positional int) ([]string, int, bool) {
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return nil, code, false
	}
	if len(pos) != positional {
		if positional == 0 {
			c.usageErr(e, fs, "unexpected argument %q", pos[0])
		} else {
			c.usageErr(e, fs, "want exactly one action id, got %d arguments", len(pos))
		}
		return nil, exitUsage, false
	}
	if *c.format != "text" && *c.format != "json" {
		c.usageErr(e, fs, "--format must be text or json, not %q", *c.format)
		return nil, exitUsage, false
	}
	if positional == 1 && pos[0] == "" {
		c.usageErr(e, fs, "the action id is empty")
		return nil, exitUsage, false
	}
	base, from, err := c.resolveGateway()
	if err != nil {
		c.usageErr(e, fs, "%v", err)
		return nil, exitUsage, false
	}
	*c.gateway, c.from = base, from
	return pos, exitOK, true
}

// gatewayBase is the gateway's base URL from --gateway, else $TOOLGATE_URL, else the
// default. host:port means http://host:port; anything else must be an http(s) URL with a
// host.
func gatewayBase(flagValue, envValue string) (string, error) {
	raw, from := strings.TrimSpace(flagValue), "--gateway"
	if raw == "" {
		raw, from = strings.TrimSpace(envValue), "$"+envGatewayURL
	}
	if raw == "" {
		return defaultURL, nil
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q is not a gateway address: give host:port (127.0.0.1:8080) or an http(s) URL (https://gw.example.com)", from, raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func (c *conn) usageErr(e env, fs *flag.FlagSet, format string, args ...any) {
	fmt.Fprintf(e.Stderr, "toolgate %s: %s\n\n", c.label(), fmt.Sprintf(format, args...))
	fs.Usage()
}

// label names the subcommand in messages: "actions list", "rollout status".
func (c *conn) label() string {
	if c.command != "" {
		return c.command + " " + c.name
	}
	return "actions " + c.name
}

// client builds the API client from the flags and the environment.
func (c *conn) client() (*client.Client, string) {
	base := *c.gateway // normalized by parse
	if base == "" {
		base = defaultURL
	}
	key := *c.key
	if key == "" {
		key = os.Getenv(envGatewayKey)
	}
	return client.New(base, key, &http.Client{Timeout: *c.timeout}), base
}

// fail reports err and returns the exit code: 1 for a refusal (4xx), 2 for an
// unreachable gateway or a gateway failure (5xx).
func (c *conn) fail(e env, base string, err error) int {
	var p *client.Problem
	if errors.As(err, &p) {
		// A detail may quote stored text (an assignee): escaped like every
		// text the CLI prints (oneLine).
		fmt.Fprintf(e.Stderr, "%s: %s\n", oneLine(p.Code), oneLine(p.Detail))
		for _, fe := range p.Errors {
			fmt.Fprintf(e.Stderr, "  %s: %s (%s)\n", oneLine(fe.Pointer), oneLine(fe.Detail), oneLine(fe.Code))
		}
		if p.Temporary() {
			if p.RetryAfter > 0 {
				fmt.Fprintf(e.Stderr, "the gateway failed; retry after %ds\n", p.RetryAfter)
			}
			return exitUsage
		}
		return exitNegative
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is printed already
	}
	fmt.Fprintf(e.Stderr, "toolgate %s: gateway %s: %v %s\n", c.label(), base, err, c.unreachableHint())
	return exitUsage
}

// emit prints an action as the format asks.
func (c *conn) emit(e env, a *client.Action) int {
	if *c.format == "json" {
		writeActionJSON(e.Stdout, a.Raw)
		return exitOK
	}
	printAction(e.Stdout, a)
	return exitOK
}

func writeActionJSON(w io.Writer, raw json.RawMessage) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		w.Write(append(raw, '\n'))
		return
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Write(append(b, '\n'))
}

func actionsList(ctx context.Context, e env, args []string) int {
	fs, c := newActionsFlags(e, "list", "[--state S] [--tool ID] [--policy-version V] [--correlation-id C] [--limit N] [--cursor C] [--all] [--format text|json]")
	state := fs.String("state", "", "only actions in this state ("+statesList()+")")
	tool := fs.String("tool", "", "only actions of this tool id")
	policy := fs.String("policy-version", "", "only actions called under this policy version (a rule record's policy_version)")
	corr := fs.String("correlation-id", "", "only actions with this correlation id (the rule firing that caused them)")
	limit := fs.Int("limit", 0, fmt.Sprintf("page size, 1 to %d (default: the gateway's)", ledger.MaxListLimit))
	cursor := fs.String("cursor", "", "start at this next_cursor of an earlier page")
	all := fs.Bool("all", false, "follow next_cursor to the last page")
	if _, code, ok := c.parse(e, fs, args, 0); !ok {
		return code
	}
	if *state != "" && !ledger.State(*state).Valid() {
		c.usageErr(e, fs, "--state %q is not one of %s", *state, statesList())
		return exitUsage
	}
	if *limit < 0 || *limit > ledger.MaxListLimit {
		c.usageErr(e, fs, "--limit must be from 1 to %d", ledger.MaxListLimit)
		return exitUsage
	}
	cl, base := c.client()
	f := client.Filter{State: *state, ToolID: *tool, PolicyVersion: *policy, CorrelationID: *corr, Limit: *limit, Cursor: *cursor}
	var page *client.Page
	var err error
	if *all {
		var acts []client.Action
		acts, err = cl.ListAllActions(ctx, f)
		page = &client.Page{Actions: acts}
	} else {
		page, err = cl.ListActions(ctx, f)
	}
	if err != nil {
		return c.fail(e, base, err)
	}
	if *c.format == "json" {
		b, _ := json.MarshalIndent(page, "", "  ")
		e.Stdout.Write(append(b, '\n'))
		return exitOK
	}
	printActionTable(e.Stdout, page.Actions, time.Now())
	if page.NextCursor != "" {
		fmt.Fprintf(e.Stderr, "more actions: add --cursor %s, or --all\n", page.NextCursor)
	}
	return exitOK
}

func statesList() string {
	s := make([]string, 0, len(ledger.States))
	for _, st := range ledger.States {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

func actionsShow(ctx context.Context, e env, args []string) int {
	fs, c := newActionsFlags(e, "show", "ID [--format text|json]")
	pos, code, ok := c.parse(e, fs, args, 1)
	if !ok {
		return code
	}
	cl, base := c.client()
	a, err := cl.GetAction(ctx, pos[0])
	if err != nil {
		return c.fail(e, base, err)
	}
	return c.emit(e, a)
}

func actionsReconcile(ctx context.Context, e env, args []string) int {
	fs, c := newActionsFlags(e, "reconcile", "ID [--format text|json]")
	pos, code, ok := c.parse(e, fs, args, 1)
	if !ok {
		return code
	}
	cl, base := c.client()
	a, err := cl.Reconcile(ctx, pos[0])
	if err != nil {
		return c.fail(e, base, err)
	}
	return c.emit(e, a)
}

func actionsResolve(ctx context.Context, e env, args []string) int {
	fs, c := newActionsFlags(e, "resolve", "ID --outcome succeeded|rejected|not_started --note TEXT [--result-status N --result-body JSON]")
	outcome := fs.String("outcome", "", "succeeded, rejected, or not_started (grants fresh attempts; the action runs again with the same key)")
	note := fs.String("note", "", "why: recorded in the action's history (required)")
	status := fs.Int("result-status", 0, "HTTP status that retries of the action will replay (200-599)")
	body := fs.String("result-body", "", "JSON body that retries will replay, with --result-status")
	pos, code, ok := c.parse(e, fs, args, 1)
	if !ok {
		return code
	}
	switch *outcome {
	case client.OutcomeSucceeded, client.OutcomeRejected, client.OutcomeNotStarted:
	default:
		c.usageErr(e, fs, "--outcome must be succeeded, rejected or not_started")
		return exitUsage
	}
	if strings.TrimSpace(*note) == "" {
		c.usageErr(e, fs, "--note is required: say why, for the next person who reads the history")
		return exitUsage
	}
	var res *client.ResultInput
	switch {
	case *status == 0 && *body != "":
		c.usageErr(e, fs, "--result-body needs --result-status")
		return exitUsage
	case *status != 0:
		if *status < 200 || *status > 599 {
			c.usageErr(e, fs, "--result-status must be an HTTP status from 200 to 599")
			return exitUsage
		}
		if *outcome == client.OutcomeNotStarted {
			c.usageErr(e, fs, "a not_started action runs again; it takes no --result-status")
			return exitUsage
		}
		res = &client.ResultInput{StatusCode: *status}
		if *body != "" {
			if !json.Valid([]byte(*body)) {
				c.usageErr(e, fs, "--result-body is not valid JSON")
				return exitUsage
			}
			res.Body = json.RawMessage(*body)
		}
	}
	cl, base := c.client()
	a, err := cl.Resolve(ctx, pos[0], *outcome, *note, res)
	if err != nil {
		return c.fail(e, base, err)
	}
	return c.emit(e, a)
}

func actionsApprove(ctx context.Context, e env, args []string) int {
	return actionsDecide(ctx, e, args, "approve", "the reason for approving: recorded in the history")
}

func actionsDeny(ctx context.Context, e env, args []string) int {
	return actionsDecide(ctx, e, args, "deny", "the reason for denying: recorded in the history")
}

func actionsDecide(ctx context.Context, e env, args []string, name, noteHelp string) int {
	fs, c := newActionsFlags(e, name, "ID [--note TEXT] [--format text|json]")
	note := fs.String("note", "", noteHelp)
	pos, code, ok := c.parse(e, fs, args, 1)
	if !ok {
		return code
	}
	cl, base := c.client()
	decide := cl.Approve
	if name == "deny" {
		decide = cl.Deny
	}
	a, err := decide(ctx, pos[0], *note)
	if err != nil {
		return c.fail(e, base, err)
	}
	return c.emit(e, a)
}

func actionsAssign(ctx context.Context, e env, args []string) int {
	return actionsAssignment(ctx, e, args, "assign", "ID [--assignee NAME] [--note TEXT] [--take-over] [--format text|json]")
}

func actionsUnassign(ctx context.Context, e env, args []string) int {
	return actionsAssignment(ctx, e, args, "unassign", "ID [--note TEXT] [--take-over] [--format text|json]")
}

// actionsAssignment is assign and unassign: the state of the action never
// changes; a refusal because another operator holds it (409
// action_assigned) names them, and --take-over overrides it.
func actionsAssignment(ctx context.Context, e env, args []string, name, synopsis string) int {
	fs, c := newActionsFlags(e, name, synopsis)
	var assignee *string
	if name == "assign" {
		assignee = fs.String("assignee", "", "who takes the action (default: the API key's name)")
	}
	note := fs.String("note", "", fmt.Sprintf("why, recorded in the action's history (at most %d bytes)", ledger.MaxAssignmentNoteBytes))
	takeOver := fs.Bool("take-over", false, "take or release an action another operator holds")
	pos, code, ok := c.parse(e, fs, args, 1)
	if !ok {
		return code
	}
	o := client.AssignOptions{Note: *note, TakeOver: *takeOver}
	if assignee != nil {
		o.Assignee = strings.TrimSpace(*assignee)
	}
	if err := ledger.CheckAssignText(o.Assignee, o.Note); err != nil {
		c.usageErr(e, fs, "%v", err)
		return exitUsage
	}
	cl, base := c.client()
	change := cl.Assign
	if name == "unassign" {
		change = cl.Unassign
	}
	a, err := change(ctx, pos[0], o)
	if err != nil {
		var p *client.Problem
		code := c.fail(e, base, err)
		if errors.As(err, &p) && p.Code == "action_assigned" {
			fmt.Fprintln(e.Stderr, "add --take-over to take it anyway (tell them first)")
		}
		return code
	}
	return c.emit(e, a)
}
