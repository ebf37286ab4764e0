package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// parseTarget reads a target base URL: http or https, with a host.
func parseTarget(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q is not an http(s) URL such as http://127.0.0.1:9090", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("target %q: give a base URL without credentials, query or fragment", s)
	}
	return u, nil
}

// IsLoopback reports whether host (a name or an IP literal, without port)
// is this machine by its name: localhost, a *.localhost name, or a loopback
// address. Names are not resolved here: it is the early check of a target's
// URL. The decisive check is at dial time (GuardedClient), on the address
// the name resolved to, since a *.localhost name can resolve anywhere (a
// search domain, a wildcard record).
func IsLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// CheckTarget refuses a target that is not on this machine unless allowed
// names its host (or host:port). Replaying recorded calls against a real
// downstream repeats every effect — a second refund for each refund — so a
// remote sandbox must be named on purpose.
func CheckTarget(target string, allowed []string) error {
	u, err := parseTarget(target)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if IsLoopback(host) {
		return nil
	}
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == strings.ToLower(host) || a == strings.ToLower(u.Host) {
			return nil
		}
	}
	return fmt.Errorf("refusing to replay against %s: %s is not this machine, and replaying recorded calls against a real API repeats every effect (each refund becomes a second refund); replay against a sandbox copy on loopback, or name a remote sandbox with --allow-target %s",
		target, host, host)
}

// GuardedClient is the HTTP client replay sends with: its dialer connects
// to a loopback address only — checked on the address a name resolved to,
// at dial time, for every connection — unless the host being dialled is one
// allowed names (--allow-target, a remote sandbox named on purpose). It
// uses no proxy (a proxy would resolve the name itself) and follows no
// redirect. resolver nil is net.DefaultResolver.
func GuardedClient(allowed []string, resolver *net.Resolver, timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConnsPerHost = 16
	t.IdleConnTimeout = 30 * time.Second
	t.DialContext = guardedDial(allowed, resolver)
	return &http.Client{Transport: t, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// ErrNotLoopback is the dial error of a target whose address is not this
// machine's.
var ErrNotLoopback = errors.New("replay: the target's address is not loopback")

func guardedDial(allowed []string, resolver *net.Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[strings.ToLower(strings.TrimSpace(a))] = true
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Resolver: resolver}
		if !ok[h] && !ok[strings.ToLower(addr)] {
			d.Control = func(_, address string, _ syscall.RawConn) error {
				ip, _, err := net.SplitHostPort(address)
				if err != nil {
					return err
				}
				if a := net.ParseIP(ip); a == nil || !a.IsLoopback() {
					return fmt.Errorf("%w: %s resolved to %s; name a remote sandbox with --allow-target %s", ErrNotLoopback, host, ip, host)
				}
				return nil
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// ProbeKind tells a toolgate gateway from a plain downstream: a gateway
// serves the page of each of its problem codes (GET /problems/{code}), which
// a downstream does not. The probe is one GET, with no effect.
func ProbeKind(ctx context.Context, target string, client *http.Client) (Kind, error) {
	u, err := parseTarget(target)
	if err != nil {
		return "", err
	}
	if client == nil {
		client = GuardedClient(nil, nil, 5*time.Second)
	}
	probe := *u
	probe.Path = strings.TrimSuffix(u.Path, "/") + "/problems/idempotency_key_reused"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, probe.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("probe %s: %w", probe.String(), err)
	}
	defer resp.Body.Close()
	var page struct {
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &page) == nil && page.Code == "idempotency_key_reused" && page.Status == http.StatusConflict {
		return KindGateway, nil
	}
	return KindDownstream, nil
}
