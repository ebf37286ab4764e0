package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// describe says what kind of failure err is, in toolgate's own words, and
// never with its text: the SDK's errors quote what a server sent (its
// JSON-RPC error message, whatever the code, its session id, the body it
// could not decode), and a server may repeat a call's arguments or a
// credential there. Only a JSON-RPC code and an HTTP status are kept.
func describe(err error) string {
	var (
		we   *jsonrpc.Error
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		hn   x509.HostnameError
		ua   x509.UnknownAuthorityError
		ci   x509.CertificateInvalidError
		rh   tls.RecordHeaderError
		syn  *json.SyntaxError
		typ  *json.UnmarshalTypeError
		ne   net.Error
	)
	switch {
	case err == nil:
		return "no error"
	case errors.Is(err, ErrResponseTooLarge):
		return "the answer is larger than the cap"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &we):
		return fmt.Sprintf("JSON-RPC error %d", we.Code)
	case errors.Is(err, mcp.ErrSessionMissing):
		return "the server no longer knows the session"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.As(err, &cert), errors.As(err, &hn), errors.As(err, &ua), errors.As(err, &ci):
		return "the server's TLS certificate is not accepted"
	case errors.As(err, &rh):
		return "the TLS handshake failed"
	case errors.As(err, &syn), errors.As(err, &typ):
		return "the answer is not valid JSON-RPC"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, net.ErrClosed):
		return "the connection closed"
	}
	return "the request failed"
}

// failure is an error whose text is describe's (and what toolgate adds);
// errors.Is and As still see the cause.
type failure struct {
	msg   string
	cause error
}

func (f *failure) Error() string { return f.msg }
func (f *failure) Unwrap() error { return f.cause }

// failed makes a failure: what toolgate says, then describe(cause).
func failed(cause error, format string, a ...any) error {
	return &failure{msg: fmt.Sprintf(format, a...) + ": " + describe(cause), cause: cause}
}
