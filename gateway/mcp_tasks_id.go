package gateway

import (
	crand "crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/toolgate/toolgate/ledger"
)

// A task id names an action and the caller it was handed to. It is opaque
// to the client: "tgt1" and the base64url of a version byte, then the
// tenant, the caller (key name or token subject) and the action id, each
// length-prefixed, then a random nonce. The nonce is stored with the
// action as the evidence of the tools/call that asked for it (provider
// call "mcp", call id "task:<hex>"), so an id is honoured only when the
// ledger holds that evidence: an id someone made up, or one whose caller
// part was changed, names no task.
const (
	mcpTaskIDPrefix  = "tgt1"
	mcpTaskIDVersion = 1
	mcpTaskNonceLen  = 16
	// mcpTaskIDMax bounds a task id's length (a longer one is not decoded).
	mcpTaskIDMax = 2048
	// mcpTaskCallIDPrefix starts the provider call id that carries a task's nonce.
	mcpTaskCallIDPrefix = "task:"
)

// taskRef is what a task id says.
type taskRef struct {
	tenant, caller, action string
	nonce                  [mcpTaskNonceLen]byte
}

// newTaskRef names a new task of caller p for action.
func newTaskRef(p *Principal, action string) taskRef {
	r := taskRef{tenant: p.Tenant, caller: p.Name, action: action}
	crand.Read(r.nonce[:])
	return r
}

// callID is the provider call id that records r's nonce on the action.
func (r taskRef) callID() string { return mcpTaskCallIDPrefix + hex.EncodeToString(r.nonce[:]) }

// String is the task id.
func (r taskRef) String() string {
	b := []byte{mcpTaskIDVersion}
	for _, s := range []string{r.tenant, r.caller, r.action} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, r.nonce[:]...)
	return mcpTaskIDPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseTaskID reads a task id; ok is false for anything String did not make.
func parseTaskID(id string) (r taskRef, ok bool) {
	if len(id) > mcpTaskIDMax {
		return r, false
	}
	rest, ok := strings.CutPrefix(id, mcpTaskIDPrefix)
	if !ok {
		return r, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil || len(b) < 1 || b[0] != mcpTaskIDVersion {
		return r, false
	}
	b = b[1:]
	var parts [3]string
	for i := range parts {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return r, false
		}
		parts[i] = string(b[w : w+int(n)])
		b = b[w+int(n):]
	}
	if len(b) != mcpTaskNonceLen || parts[2] == "" {
		return r, false
	}
	r.tenant, r.caller, r.action = parts[0], parts[1], parts[2]
	copy(r.nonce[:], b)
	return r, r.String() == id
}

// recordedOn reports whether a holds r's nonce as the evidence of the
// tools/call that asked for it.
func (r taskRef) recordedOn(a *ledger.Action) bool {
	want := r.callID()
	for _, pc := range a.ProviderCalls {
		if pc.Name == "mcp" && pc.CallID == want {
			return true
		}
	}
	return false
}
