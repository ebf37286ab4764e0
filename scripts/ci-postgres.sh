#!/usr/bin/env bash
# ci-postgres.sh — make a local PostgreSQL server ready for toolgate's tests.
#
# Installs Debian's postgresql package when no server is installed, creates
# and starts the newest version's "main" cluster when it is not running,
# creates (or resets the password of) a login role and a database it owns,
# and prints ONE line on stdout:
#
#   export TOOLGATE_TEST_POSTGRES=postgres://ROLE:PASSWORD@127.0.0.1:PORT/DB?sslmode=disable
#
# so CI can run:   eval "$(bash scripts/ci-postgres.sh)"
# Everything else goes to stderr. Running it again changes nothing and prints
# the same line. It must run as root (CI does) or as the postgres user.
#
# Environment (all optional):
#   TOOLGATE_PG_ROLE      role name      (default toolgate)
#   TOOLGATE_PG_PASSWORD  its password   (default toolgate; a throwaway CI server)
#   TOOLGATE_PG_DB        database name  (default toolgate_test)
set -euo pipefail

role=${TOOLGATE_PG_ROLE:-toolgate}
password=${TOOLGATE_PG_PASSWORD:-toolgate}
db=${TOOLGATE_PG_DB:-toolgate_test}

log() { echo "ci-postgres: $*" >&2; }
die() { log "$*"; exit 1; }

for name in "$role" "$db"; do
	[[ $name =~ ^[a-z_][a-z0-9_]*$ ]] || die "name '$name' must match [a-z_][a-z0-9_]*"
done
[[ $password != *"'"* ]] || die "the password must not contain a single quote"

# as_postgres runs a command as the postgres OS user.
as_postgres() {
	if [[ $(id -un) == postgres ]]; then
		"$@"
	elif [[ $EUID -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		die "run as root or as postgres (now $(id -un))"
	fi
}

newest_version() {
	local d v best=
	for d in /usr/lib/postgresql/*/bin/postgres; do
		[[ -x $d ]] || continue
		v=${d#/usr/lib/postgresql/}
		v=${v%%/*}
		if [[ -z $best ]] || ((v > best)); then best=$v; fi
	done
	echo "$best"
}

# 1. Install.
version=$(newest_version)
if [[ -z $version ]] || ! command -v pg_ctlcluster >/dev/null; then
	[[ $EUID -eq 0 ]] || die "PostgreSQL is not installed and installing it needs root"
	log "installing postgresql from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
	version=$(newest_version)
	[[ -n $version ]] || die "apt-get installed postgresql but no /usr/lib/postgresql/*/bin/postgres"
fi

# cluster_field N prints field N of "pg_lsclusters -h" for VERSION main
# (3: port, 4: status).
cluster_field() {
	pg_lsclusters -h | awk -v v="$version" -v f="$1" '$1 == v && $2 == "main" { print $f }'
}

# 2. Create and start the cluster.
if [[ -z $(cluster_field 2) ]]; then
	log "creating cluster $version/main"
	pg_createcluster "$version" main >&2
fi
if [[ $(cluster_field 4) != online* ]]; then
	log "starting cluster $version/main"
	pg_ctlcluster "$version" main start >&2 || {
		tail -n 20 "/var/log/postgresql/postgresql-$version-main.log" >&2 || true
		die "could not start cluster $version/main"
	}
fi
port=$(cluster_field 3)
[[ -n $port ]] || die "cluster $version/main has no port"
for _ in $(seq 1 60); do
	if as_postgres pg_isready -q -p "$port"; then break; fi
	sleep 0.5
done
as_postgres pg_isready -q -p "$port" || die "cluster $version/main on port $port is not ready after 30s"

# 3. Role and database.
psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$port" -d postgres "$@"; }
psql_admin >&2 <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
        CREATE ROLE $role LOGIN;
    END IF;
END
\$\$;
ALTER ROLE $role LOGIN PASSWORD '$password';
SQL
if [[ -z $(psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$db'") ]]; then
	log "creating database $db owned by $role"
	psql_admin -c "CREATE DATABASE $db OWNER $role" >&2
fi

dsn="postgres://$role:$password@127.0.0.1:$port/$db?sslmode=disable"
# Prove the DSN works over TCP with a password, as the tests will connect.
PGPASSWORD=$password psql -X -q -h 127.0.0.1 -p "$port" -U "$role" -d "$db" -tA -c 'SELECT 1' >/dev/null ||
	die "cannot connect as $role to $db over 127.0.0.1:$port"
log "ready: PostgreSQL $version on 127.0.0.1:$port, database $db, role $role"
echo "export TOOLGATE_TEST_POSTGRES=$dsn"
