#!/bin/sh
# Starts PostgreSQL on $PGDATA, making the cluster there on the first start.
# Runs as the image's postgres user; everything it needs comes from the environment:
#   POSTGRES_PASSWORD  (required) the password of POSTGRES_USER, for connections over TCP
#   POSTGRES_USER      the cluster's superuser and the database's owner (default shardlab)
#   POSTGRES_DB        the database made on the first start (default shardlab)
# Extra arguments go to the postgres server (say, -c max_connections=300).
set -eu

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "shardlab-postgres: set POSTGRES_PASSWORD (openssl rand -hex 24)" >&2
        exit 1
    fi
    echo "shardlab-postgres: first start, making the cluster in $PGDATA"
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    # TCP needs the password (SCRAM); the socket inside this container is trusted, so that
    # `docker compose exec db pg_dump ...` and the health check need none.
    initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
        --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256
    rm -f "$pwfile"
    # initdb allows TCP from loopback only; the app connects over the compose network.
    printf '%s\n' "host all all 0.0.0.0/0 scram-sha-256" "host all all ::/0 scram-sha-256" \
        >> "$PGDATA/pg_hba.conf"
    # Single-user mode: the database exists before the server ever listens, so nothing can
    # connect to a half-made cluster.
    echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\";" \
        | postgres --single -D "$PGDATA" postgres > /dev/null
    echo "shardlab-postgres: made database $POSTGRES_DB owned by $POSTGRES_USER"
fi

exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
