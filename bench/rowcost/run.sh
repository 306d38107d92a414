#!/usr/bin/env bash
# The row-cost experiment (BENCHMARKS.md, "What each part of an append costs"):
# pgbench runs the caller's transaction bare and with one way of writing a
# record beside its row, the variants in turn within each round on one
# throwaway cluster (fsync, synchronous_commit and
# full_page_writes on, shared_buffers 256MB, as internal/pgtest), and prints
# each variant's transactions a second and WAL bytes a transaction, and the
# median ratio to the bare transaction of the same round.
#
#   bench/rowcost/run.sh [-c CLIENTS] [-T SECONDS] [-r ROUNDS] [VARIANT...]
#
# Variants (the files VARIANT.sql beside this script): bare, plain (a
# record-sized row with one unique key: the floor), rec_nowl (a row of
# herald_record's shape and indexes without the sequencer's work list),
# rec_wl (with it: herald's btree on (xid, pos)), rec_brin (a BRIN on the
# appending transaction instead), rec_oc (rec_wl and ON CONFLICT (id) DO
# NOTHING), rec_full (and the seal check's probe: herald's sqlInsertRecord),
# message (a transactional logical decoding message,
# pg_logical_emit_message, no row) and message+decode (the same while one
# client drains a pgoutput slot with pg_logical_slot_get_binary_changes, the
# cost of reading the messages back).
# With a message variant the cluster runs at wal_level = logical, for every
# variant of the run. Needs PostgreSQL's server binaries (PGBIN, else the
# newest /usr/lib/postgresql/*/bin), pgbench and psql; as root, the cluster
# runs as the postgres user.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
clients=32 seconds=8 rounds=4
while getopts c:T:r: o; do
  case $o in
    c) clients=$OPTARG ;; T) seconds=$OPTARG ;; r) rounds=$OPTARG ;;
    *) echo "usage: $0 [-c CLIENTS] [-T SECONDS] [-r ROUNDS] [VARIANT...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(bare plain rec_nowl rec_wl rec_oc rec_full)
logical=replica
for v in "${variants[@]}"; do
  f=${v%+decode}
  [ -f "$here/$f.sql" ] || { echo "$0: no variant $v (no $here/$f.sql)" >&2; exit 2; }
  case $v in message*) logical=logical ;; esac
done
pgbin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$pgbin/initdb" ] || { echo "$0: no initdb in PGBIN=$pgbin" >&2; exit 2; }

dir=$(mktemp -d /tmp/herald-rowcost.XXXXXX)
run=()
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; run=(su postgres -c); fi
as() { if [ ${#run[@]} -gt 0 ]; then "${run[@]}" "$*"; else sh -c "$*"; fi; }
port=$(( 20000 + RANDOM % 20000 ))
cleanup() { as "$pgbin/pg_ctl -D $dir/data -m immediate stop" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
as "$pgbin/initdb -D $dir/data -U postgres --auth=trust --encoding=UTF8 --locale=C" >/dev/null
cat >> "$dir/data/postgresql.auto.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 300
shared_buffers = '256MB'
wal_level = $logical
CONF
as "$pgbin/pg_ctl -D $dir/data -l $dir/log -w start" >/dev/null
psql=(psql -h 127.0.0.1 -p "$port" -U postgres -X -q -At)
drain="SELECT count(*) FROM pg_logical_slot_get_binary_changes('herald', NULL, 20000, 'proto_version', '1', 'publication_names', 'herald', 'messages', 'true')"

echo "# $clients clients, ${seconds}s a variant, $rounds rounds, wal_level $logical, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
results=$dir/results
for r in $(seq 1 "$rounds"); do
  "${psql[@]}" -c "DROP DATABASE IF EXISTS rowcost" -c "CREATE DATABASE rowcost" 2>/dev/null
  "${psql[@]}" -d rowcost -f "$here/schema.sql" >/dev/null
  if [ $logical = logical ]; then
    "${psql[@]}" -d rowcost -c "CREATE PUBLICATION herald" -c "SELECT pg_create_logical_replication_slot('herald', 'pgoutput')" >/dev/null
  fi
  for v in "${variants[@]}"; do
    "${psql[@]}" -d rowcost -c "CHECKPOINT"
    [ $logical = logical ] && "${psql[@]}" -d rowcost -c "${drain/20000/NULL}" >/dev/null # the slot starts here
    drainer=
    if [ "$v" != "${v%+decode}" ]; then
      ( while [ ! -e "$dir/stop" ]; do "${psql[@]}" -d rowcost -c "$drain" >/dev/null; done ) &
      drainer=$!
    fi
    w0=$("${psql[@]}" -d rowcost -c "SELECT pg_current_wal_lsn()")
    tps=$(pgbench -h 127.0.0.1 -p "$port" -U postgres -n -M prepared -c "$clients" -j 2 -T "$seconds" \
      -f "$here/${v%+decode}.sql" rowcost 2>&1 | awk '/^tps/ {print $3}')
    w1=$("${psql[@]}" -d rowcost -c "SELECT pg_current_wal_lsn()")
    if [ -n "$drainer" ]; then touch "$dir/stop"; wait "$drainer"; rm -f "$dir/stop"; fi
    n=$("${psql[@]}" -d rowcost -c "SELECT count(*) FROM app_order")
    wal=$("${psql[@]}" -d rowcost -c "SELECT round(pg_wal_lsn_diff('$w1', '$w0') / greatest($n, 1))")
    "${psql[@]}" -d rowcost -c "TRUNCATE app_order"
    printf 'round %d %-16s %10.0f tx/s %6s WAL B/tx\n' "$r" "$v" "${tps:-0}" "$wal" | tee -a "$results"
  done
  [ $logical = logical ] && "${psql[@]}" -d rowcost -c "SELECT pg_drop_replication_slot('herald')" >/dev/null
done

echo "# median of the rounds; ratio to the bare transaction of the same round (range); WAL of the last round"
awk '{ tps[$3, $2] = $4; wal[$3] = $6; if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 }; rounds[$2] = 1 }
  function median(a, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  END { for (i = 1; i <= n; i++) { v = order[i]; k = 0; delete x; delete y
      for (r in rounds) { k++; x[k] = tps[v, r]; y[k] = tps["bare", r] ? tps[v, r] / tps["bare", r] : 0 }
      m = median(x, k); q = median(y, k); lo = y[1]; hi = y[k]
      if ("bare" in seen) printf "%-16s %10.0f tx/s  %.2fx (%.2f-%.2f)  %6s WAL B/tx\n", v, m, q, lo, hi, wal[v]
      else printf "%-16s %10.0f tx/s  %6s WAL B/tx\n", v, m, wal[v] } }' "$results"
