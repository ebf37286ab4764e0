-- 004: List by policy version and by correlation id (docs/reference/files.md, docs/reference/http-api.md): "the rule
-- fired" and "the refunds it caused" are one query. Partial indexes: most
-- actions of a deployment that does not use one of the two carry '', and
-- those rows cost no index entry on insert. The store's query repeats the
-- "<> ''" term so that SQLite may use them.
CREATE INDEX actions_tenant_policy_created ON actions (tenant, policy_version, created_at DESC, id) WHERE policy_version <> '';
CREATE INDEX actions_tenant_correlation_created ON actions (tenant, correlation_id, created_at DESC, id) WHERE correlation_id <> '';
