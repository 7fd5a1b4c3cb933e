#!/usr/bin/env bash
# ctest's load_test: bench/load_test.mjs for 8 s with 16 clients against one server with a small queue,
# then the same through scripts/serve_cluster.sh (nginx, 2 backends). The numbers do not matter here;
# what is checked is that overload ends in 503s and nothing else, that /metrics parses and agrees with
# the clients, that the server still answers /health, and that nginx spreads and pins requests.
#   tests/server/load_test.sh RILL_BINARY SHARED_DIR
# Skips (77) without Node.js, or without nginx for the second half; under CI=true both are required.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
rill=$1
model=$2/models/stories260K/stories260K.gguf

source "$here/node_deps.sh"
node_deps_ready "$here" "the load test"

tmp=$(mktemp -d)
cluster_pid=
cleanup() {
  if [[ -n $cluster_pid ]]; then kill -TERM "$cluster_pid" 2>/dev/null || true; wait "$cluster_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# --parallel 2 --max-queue 4 serves six of the sixteen clients at a time; the rest get 503s.
serve_flags=(--parallel 2 --max-queue 4 --ctx 256 -t 1 --no-mmap)

echo "== one server, 16 clients, 8 s"
node "$repo/bench/load_test.mjs" --rill "$rill" -m "$model" --clients 16 --duration 8 --json -- "${serve_flags[@]}" >"$tmp/single.json"
node "$here/load_check.mjs" single "$tmp/single.json"

echo "== nginx in front of 2 servers, 16 clients, 8 s"
if ! PATH=$PATH:/usr/sbin:/sbin command -v nginx >/dev/null; then
  echo "nginx is not installed (scripts/setup.sh installs it): the cluster half is skipped" >&2
  [[ -n ${CI:-} ]] && exit 1
  exit 77
fi
"$repo/scripts/serve_cluster.sh" --rill "$rill" --backends 2 --port 0 -m "$model" -- "${serve_flags[@]}" >"$tmp/cluster.out" 2>"$tmp/cluster.err" &
cluster_pid=$!
for ((i = 0; i < 600; i++)); do
  grep -q 'ready on' "$tmp/cluster.out" && break
  kill -0 "$cluster_pid" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q 'ready on' "$tmp/cluster.out"; then
  echo "FAIL serve_cluster.sh did not start" >&2
  cat "$tmp/cluster.out" "$tmp/cluster.err" >&2
  exit 1
fi
url=$(sed -n 's/.*ready on \(http:[^ ]*\).*/\1/p' "$tmp/cluster.out")
backend_urls=$(sed -n 's/.*backend [0-9]* pid [0-9]* \(http:[^ ]*\).*/\1/p' "$tmp/cluster.out" | paste -sd,)
backend_pids=$(sed -n 's/.*backend [0-9]* pid \([0-9]*\) .*/\1/p' "$tmp/cluster.out" | paste -sd,)
node "$here/load_check.mjs" sticky "$url" "$backend_urls"
node "$repo/bench/load_test.mjs" --url "$url" --pid "$backend_pids" --metrics "$backend_urls" --clients 16 --duration 8 --json >"$tmp/cluster.json"
node "$here/load_check.mjs" cluster "$tmp/cluster.json" "$backend_urls"

# SIGTERM drains the backends, then stops nginx; nothing may be left running.
kill -TERM "$cluster_pid"
wait "$cluster_pid" || true
cluster_pid=
left=
for pid in ${backend_pids//,/ }; do kill -0 "$pid" 2>/dev/null && left+=" backend $pid"; done
address=${url#http://}
(exec 3<>"/dev/tcp/${address%:*}/${address##*:}") 2>/dev/null && left+=" nginx on $address"
exited=$(grep -c 'backend [0-9]* exited with 0$' "$tmp/cluster.err" || true)
if ((exited != 2)); then
  echo "FAIL the backends did not both exit with 0 on SIGTERM:" >&2
  cat "$tmp/cluster.err" >&2
  exit 1
fi
if [[ -n $left ]]; then
  echo "FAIL serve_cluster.sh left running:$left" >&2
  exit 1
fi
echo "ok   serve_cluster.sh drained its backends (both exited with 0) and stopped nginx"
