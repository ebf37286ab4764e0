package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Doer sends an HTTP request (an *http.Client).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// defaultClient follows at most 3 redirects, each to an https (or
// loopback http) address.
func defaultClient() *http.Client {
	return &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("too many redirects")
		}
		return checkScheme(r.URL, "redirect")
	}}
}

// Status is what a Verifier knows of the issuer's keys, for /readyz.
type Status struct {
	Issuer  string
	JWKSURI string    // "" until the metadata was read
	Keys    int       // signing keys in use
	Fetched time.Time // when they were fetched; zero: never
	Fetches int       // fetches tried
	// Err is why the last fetch failed ("" when it succeeded or none was
	// tried), at ErrAt. The keys of the last good fetch stay in use.
	Err   string
	ErrAt time.Time
}

// Status says what the Verifier knows of the issuer's keys.
func (v *Verifier) Status() Status {
	v.mu.Lock()
	st := Status{Issuer: v.cfg.Issuer, JWKSURI: v.jwksURI, Fetches: v.fetches, Err: v.lastErr, ErrAt: v.lastErrAt}
	v.mu.Unlock()
	if set := v.set.Load(); set != nil {
		st.Keys, st.Fetched = len(set.keys), set.fetched
	}
	return st
}

// Run fetches the issuer's keys now and every RefreshInterval until ctx
// ends, so that a key the issuer removed stops verifying tokens. It returns
// when ctx is done.
func (v *Verifier) Run(ctx context.Context) {
	t := time.NewTicker(v.cfg.RefreshInterval)
	defer t.Stop()
	for {
		v.refresh(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh fetches the issuer's metadata and keys now (tests, a reload); it
// returns the fetch's error. A failed fetch leaves the keys in use.
func (v *Verifier) Refresh(ctx context.Context) error {
	v.refresh(ctx, true)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lastErr != "" {
		return errors.New(v.lastErr)
	}
	return nil
}

// candidates are the keys that may have signed a token with kid and alg:
// the key of that kid, or every signing key when the token names none. A
// kid the set lacks (or no set at all) causes one fetch, at most one per
// RefetchInterval.
func (v *Verifier) candidates(ctx context.Context, kid string, alg string) []jose.JSONWebKey {
	out := v.match(kid, alg)
	if len(out) > 0 {
		return out
	}
	if set := v.set.Load(); set != nil && kid == "" {
		return nil // no kid and no key fits: a refetch would not help
	}
	v.refresh(ctx, false)
	return v.match(kid, alg)
}

func (v *Verifier) match(kid, alg string) []jose.JSONWebKey {
	set := v.set.Load()
	if set == nil {
		return nil
	}
	var out []jose.JSONWebKey
	for _, k := range set.keys {
		if (kid == "" || k.KeyID == kid) && (k.Algorithm == "" || k.Algorithm == alg) {
			out = append(out, k)
		}
	}
	return out
}

func (v *Verifier) knows(kid string) bool {
	if set := v.set.Load(); set != nil {
		for _, k := range set.keys {
			if k.KeyID == kid {
				return true
			}
		}
	}
	return false
}

// refresh fetches the keys, unless another fetch is in flight (then it
// waits for that one) or, when not forced, the last one started less than
// RefetchInterval ago. The fetch runs on a context of its own (bounded by
// FetchTimeout), so a caller that gives up does not cancel it for the
// others waiting.
func (v *Verifier) refresh(ctx context.Context, force bool) {
	v.mu.Lock()
	if ch := v.running; ch != nil {
		v.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return
	}
	now := v.cfg.Now()
	if !force && !v.lastAttempt.IsZero() && v.cfg.RefetchInterval > 0 && now.Sub(v.lastAttempt) < v.cfg.RefetchInterval && !now.Before(v.lastAttempt) {
		v.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	v.running, v.lastAttempt = ch, now
	v.fetches++
	jwksURI := v.jwksURI
	v.mu.Unlock()

	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.cfg.FetchTimeout)
	keys, uri, err := v.fetch(fctx, jwksURI)
	cancel()

	v.mu.Lock()
	if uri != "" {
		v.jwksURI = uri
	}
	if err != nil {
		v.lastErr, v.lastErrAt = err.Error(), v.cfg.Now()
	} else {
		v.lastErr, v.lastErrAt = "", time.Time{}
		old := v.set.Load()
		v.set.Store(&keySet{keys: keys, fetched: v.cfg.Now()})
		if old == nil || !sameKeys(old.keys, keys) {
			v.gen.Add(1)
		}
	}
	v.running = nil
	v.mu.Unlock()
	close(ch)
}

func sameKeys(a, b []jose.JSONWebKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, err1 := a[i].MarshalJSON()
		y, err2 := b[i].MarshalJSON()
		if err1 != nil || err2 != nil || string(x) != string(y) {
			return false
		}
	}
	return true
}

// fetch reads the issuer's metadata (when jwksURI is not known yet) and its
// JWKS. It returns the jwks_uri it used, so that a metadata read that
// succeeded is kept even when the JWKS fetch fails.
func (v *Verifier) fetch(ctx context.Context, jwksURI string) ([]jose.JSONWebKey, string, error) {
	if jwksURI == "" {
		var err error
		if jwksURI, err = v.discover(ctx); err != nil {
			return nil, "", err
		}
	}
	body, err := v.get(ctx, jwksURI)
	if err != nil {
		return nil, jwksURI, fmt.Errorf("JWKS %s: %w", jwksURI, err)
	}
	keys, err := ParseJWKS(body)
	if err != nil {
		return nil, jwksURI, fmt.Errorf("JWKS %s: %w", jwksURI, err)
	}
	return keys, jwksURI, nil
}

// MetadataURLs are where an issuer's metadata is looked for, in order: RFC
// 8414's /.well-known/oauth-authorization-server (inserted before the
// issuer's path), then OpenID Connect Discovery's
// /.well-known/openid-configuration (appended to it).
func MetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	rfc := *u
	rfc.Path, rfc.RawPath = "/.well-known/oauth-authorization-server"+path, ""
	oidc := *u
	oidc.Path, oidc.RawPath = path+"/.well-known/openid-configuration", ""
	return []string{rfc.String(), oidc.String()}
}

// discover reads the issuer's metadata and returns its jwks_uri.
func (v *Verifier) discover(ctx context.Context) (string, error) {
	var errs []string
	for _, mu := range MetadataURLs(v.cfg.Issuer) {
		body, err := v.get(ctx, mu)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", mu, err))
			continue
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			errs = append(errs, fmt.Sprintf("%s: not a JSON metadata document", mu))
			continue
		}
		if meta.Issuer != v.cfg.Issuer {
			errs = append(errs, fmt.Sprintf("%s: names issuer %q, not %q", mu, clip(meta.Issuer), v.cfg.Issuer))
			continue
		}
		u, err := url.Parse(meta.JWKSURI)
		if err != nil || u.Host == "" {
			errs = append(errs, fmt.Sprintf("%s: no usable jwks_uri", mu))
			continue
		}
		if err := checkScheme(u, "jwks_uri"); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", mu, err))
			continue
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("issuer metadata: %s", strings.Join(errs, "; "))
}

// get reads one document: 200, at most maxDocumentBytes.
func (v *Verifier) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %s", v.cfg.FetchTimeout)
		}
		return nil, errors.New(scrubURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %s", v.cfg.FetchTimeout)
		}
		return nil, fmt.Errorf("reading the answer: %v", err)
	}
	if len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("the answer is longer than %d bytes", maxDocumentBytes)
	}
	return body, nil
}

// scrubURLError is a transport error without the URL net/http repeats in it.
func scrubURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// ParseJWKS reads a JWK Set and returns its public signing keys. Keys it
// cannot use (private or symmetric keys, encryption keys, unknown types)
// are skipped; a document with no usable key is an error.
func ParseJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, errors.New("not a JSON JWK Set")
	}
	var out []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if k.UnmarshalJSON(raw) != nil || !k.Valid() || !k.IsPublic() || k.Use == "enc" {
			continue
		}
		if k.Algorithm != "" && !asymmetric(k.Algorithm) {
			continue
		}
		out = append(out, k)
		if len(out) == maxKeys {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no usable public signing key among %d", len(doc.Keys))
	}
	return out, nil
}

func asymmetric(alg string) bool {
	for _, a := range Algorithms {
		if string(a) == alg {
			return true
		}
	}
	return false
}
