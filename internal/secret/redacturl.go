package secret

import (
	"net/url"
	"strings"
)

// RedactURL hides a password in a URL-shaped string, also in one that does not
// parse as a URL.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
		return s
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path, _ := strings.Cut(rest, "/")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return s
	}
	out := scheme + "://" + user + ":xxxxx" + authority[at:]
	if path != "" || strings.Contains(rest, "/") {
		out += "/" + path
	}
	return out
}
