package gateway

// ForgeTaskID returns id with its tenant and caller replaced and a fresh
// nonce: what a client that decoded an id could make of it (tests only).
func ForgeTaskID(id, tenant, caller string) string {
	r, ok := parseTaskID(id)
	if !ok {
		return id
	}
	f := newTaskRef(&Principal{Tenant: tenant, Name: caller}, r.action)
	return f.String()
}
