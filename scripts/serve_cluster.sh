#!/usr/bin/env bash
# The scale-out recipe: N `rill serve` backends on loopback ports behind nginx as a reverse proxy, all
# in a temporary folder (config, pid file, logs), nothing of the system's nginx touched.
#
#   scripts/serve_cluster.sh --backends 2 --port 8080 -m model.gguf [-- rill serve flags]
#
# Then point any OpenAI client at http://127.0.0.1:8080/v1. Requests with an X-Conversation-Id header
# always reach the same backend (consistent hashing on the key), so a returning conversation finds its
# prompt in that backend's cache; requests without one go to the backend with the fewest open requests
# (least_conn), which for long-lived streams is a better measure of load than taking turns.
#
# Options:
#   --backends N   backends to start (default 2); each gets the serve flags after --
#   --port P       nginx's port on 127.0.0.1 (default 8080; 0 picks a free one)
#   -m MODEL       the model every backend serves
#   --rill BIN     the rill binary (default: build/bin/rill in this checkout)
#   --dir DIR      keep the config and logs in DIR instead of a temporary folder removed at exit
#
# Prints one line per backend ("backend I pid PID http://127.0.0.1:PORT"), then "ready on URL" once
# nginx answers. Runs in the foreground until Ctrl-C or SIGTERM, or until nginx or a backend dies. On
# the way out the backends get SIGTERM first, which drains them (they finish the requests in flight,
# still streamed through nginx, and refuse new ones with 503), then nginx stops gracefully.
# Needs Debian's nginx package (scripts/setup.sh installs it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

backends=2
port=8080
model=
rill=$here/../build/bin/rill
dir=
serve_flags=()
usage() { sed -n '2,/^set -e/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }
while (($#)); do
  case $1 in
    --backends) backends=${2:?}; shift 2 ;;
    --port) port=${2:?}; shift 2 ;;
    -m|--model) model=${2:?}; shift 2 ;;
    --rill) rill=${2:?}; shift 2 ;;
    --dir) dir=${2:?}; shift 2 ;;
    --) shift; serve_flags=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "serve_cluster: unknown option $1" >&2; usage ;;
  esac
done
[[ -n $model ]] || usage
[[ $backends =~ ^[0-9]+$ ]] && ((backends >= 1 && backends <= 64)) || { echo "serve_cluster: --backends is 1 to 64" >&2; exit 2; }
[[ $port =~ ^[0-9]+$ ]] && ((port <= 65535)) || { echo "serve_cluster: --port is 0 to 65535" >&2; exit 2; }
[[ -x $rill ]] || { echo "serve_cluster: no rill binary at $rill (build it, or give --rill)" >&2; exit 1; }
# Debian puts nginx in /usr/sbin, which is not on a normal user's PATH.
nginx=$(PATH=$PATH:/usr/sbin:/sbin command -v nginx || true)
[[ -n $nginx ]] || { echo "serve_cluster: nginx is not installed (apt-get install nginx, or bash scripts/setup.sh)" >&2; exit 3; }

if [[ -n $dir ]]; then
  mkdir -p "$dir"
  work=$(cd "$dir" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/rill-cluster.XXXXXX")
fi

backend_pids=()
nginx_pid=
stopping=0
cleanup() {
  local code=$?
  ((stopping)) && return
  stopping=1
  # A second Ctrl-C while draining passes on: a second signal makes rill stop at once.
  trap 'kill -TERM "${backend_pids[@]}" 2>/dev/null || true' INT TERM
  if ((${#backend_pids[@]})); then
    echo "serve_cluster: draining the backends" >&2
    kill -TERM "${backend_pids[@]}" 2>/dev/null || true
    # rill exits once its requests in flight are done (at most --drain-timeout, 30 s by default).
    local i=0 status
    for pid in "${backend_pids[@]}"; do
      i=$((i + 1))
      status=0
      wait "$pid" 2>/dev/null || status=$?
      # 127: it had already ended, and its end was reported below.
      ((status == 127)) || echo "serve_cluster: backend $i exited with $status" >&2
    done
  fi
  if [[ -n $nginx_pid ]]; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true  # graceful: lets open connections finish
    wait "$nginx_pid" 2>/dev/null || true
  fi
  [[ -n $dir ]] || rm -rf "$work"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Does anything accept connections on 127.0.0.1:PORT? (bash's /dev/tcp, so no extra tool is needed)
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# 1. The backends, each on a free loopback port it picks itself (--port 0) and prints when ready.
# Each in a session of its own (setsid), so a Ctrl-C in the terminal reaches only this script, which
# stops them in order, rather than nginx too, which would cut the streams the backends are finishing.
servers=()
for ((i = 1; i <= backends; i++)); do
  setsid "$rill" serve -m "$model" "${serve_flags[@]}" --host 127.0.0.1 --port 0 2>"$work/backend$i.log" &
  backend_pids+=($!)
done
for ((i = 1; i <= backends; i++)); do
  pid=${backend_pids[i - 1]}
  for ((tries = 0; ; tries++)); do
    address=$(grep -o -m1 'on http://127\.0\.0\.1:[0-9]*' "$work/backend$i.log" | sed 's/^on http:\/\///' || true)
    [[ -n $address ]] && break
    if ! kill -0 "$pid" 2>/dev/null || ((tries > 1200)); then
      echo "serve_cluster: backend $i did not start; its log:" >&2
      tail -n 20 "$work/backend$i.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  servers+=("$address")
  echo "serve_cluster: backend $i pid $pid http://$address"
done

# 2. nginx's config. Every path is inside $work; nginx is told its prefix, config and error log on the
#    command line, so it never reads /etc/nginx or writes /var/log/nginx.
upstream_servers=
for s in "${servers[@]}"; do
  # Passive health checks: 3 failed attempts within 2 s take a backend out for 2 s. Failures are
  # refused connections, timeouts and 502s (proxy_next_upstream below); a full backend's 503 is not one.
  upstream_servers+="        server $s max_fails=3 fail_timeout=2s;"$'\n'
done
user_line=
temp_owner=
if (($(id -u) == 0)); then
  # As root nginx's workers drop to nobody; they must reach the temp folders (a large request body is
  # spooled to one), so the work folder is made traversable and the temp folders theirs.
  user_line="user nobody $(id -gn nobody);"
  temp_owner=nobody:$(id -gn nobody)
  chmod 711 "$work"
fi
for t in client_body proxy fastcgi uwsgi scgi; do
  mkdir -p "$work/temp/$t"
  [[ -z $temp_owner ]] || chown "$temp_owner" "$work/temp/$t"
done

write_config() {
  cat >"$work/nginx.conf" <<EOF
# Written by scripts/serve_cluster.sh: nginx in front of ${#servers[@]} rill serve backends.
$user_line
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;
# One worker: proxying loopback streams is light, and the cores are the backends'.
worker_processes 1;
events { worker_connections 4096; }

http {
    log_format upstream '\$remote_addr [\$time_local] "\$request" \$status \$body_bytes_sent conv="\$http_x_conversation_id" '
                        'upstream=\$upstream_addr upstream_status=\$upstream_status time=\$request_time';
    access_log $work/access.log upstream;
    client_body_temp_path $work/temp/client_body;
    proxy_temp_path $work/temp/proxy;
    fastcgi_temp_path $work/temp/fastcgi;
    uwsgi_temp_path $work/temp/uwsgi;
    scgi_temp_path $work/temp/scgi;
    # The backends enforce their own --max-body and answer 413 in OpenAI's shape; bodies up to 1 MiB stay in memory.
    client_max_body_size 0;
    client_body_buffer_size 1m;

    # A request with a conversation key is routed by it, one without by load.
    map \$http_x_conversation_id \$rill_pool {
        ""      rill_least_conn;
        default rill_by_conversation;
    }
    # Fewest open requests first: a stream holds its connection for its whole reply, so open
    # connections are what a backend is busy with, where round robin would only count arrivals.
    upstream rill_least_conn {
        least_conn;
$upstream_servers        keepalive 32;
        # Under cpp-httplib's 5 s idle close, so nginx never reuses a connection the backend is closing.
        keepalive_timeout 4s;
    }
    # The same backends, chosen by the key's hash: open-source nginx has no sticky sessions, and a
    # consistent hash moves only the keys of a backend that fails (to the next one on the ring).
    upstream rill_by_conversation {
        hash \$http_x_conversation_id consistent;
$upstream_servers        keepalive 32;
        keepalive_timeout 4s;
    }

    server {
        listen 127.0.0.1:$1;

        # HTTP/1.1 with an empty Connection header keeps upstream connections alive.
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host \$host;
        proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        # Server-sent events: each token goes to the client as it arrives, not when a buffer fills.
        proxy_buffering off;
        proxy_cache off;
        # A long prompt on a CPU can take minutes before the first byte; a loopback backend that does
        # not accept a connection in 2 s is down.
        proxy_connect_timeout 2s;
        proxy_read_timeout 1h;
        proxy_send_timeout 1h;
        # A backend that is down (refused connection, timeout, 502) passes the request to another, and
        # counts toward its max_fails. Completions change nothing on the server, so a POST may be
        # retried (non_idempotent); a reply that has started streaming is never retried.
        proxy_next_upstream error timeout http_502 non_idempotent;
        proxy_next_upstream_tries ${#servers[@]};

        location / {
            proxy_pass http://\$rill_pool;
            # A 503 is a backend that is full (--max-queue) or draining. It is not a failure: listed in
            # proxy_next_upstream it would count toward max_fails, and under load every backend would
            # be taken out in turn while idle. So it is caught here and the request tried once more on
            # the least busy backend; if that one is full too, its 503 and Retry-After reach the client.
            proxy_intercept_errors on;
            error_page 503 = @spill;
            # No backend could be reached (all refused, or all out for their fail_timeout).
            error_page 502 = @unavailable;
        }
        location @spill {
            proxy_pass http://rill_least_conn;
        }
        # Answered as a full backend answers: 503 with Retry-After and an OpenAI-shaped error.
        location @unavailable {
            default_type application/json;
            add_header Retry-After 1 always;
            return 503 '{"error":{"message":"no backend can take the request now; retry later","type":"server_error","param":null,"code":"server_busy"}}';
        }
    }
}
EOF
}

# 3. nginx in the foreground. With --port 0 a free port is picked; if another process takes it first,
#    nginx fails to bind and the next candidate is tried.
pick_port() {
  local p
  for ((t = 0; t < 100; t++)); do
    p=$((20000 + RANDOM % 40000))
    listening "$p" || { echo "$p"; return; }
  done
  echo "serve_cluster: found no free port" >&2
  exit 1
}
for ((attempt = 1; ; attempt++)); do
  listen_port=$port
  ((port != 0)) || listen_port=$(pick_port)
  write_config "$listen_port"
  setsid "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
  nginx_pid=$!
  for ((tries = 0; tries < 100; tries++)); do
    listening "$listen_port" && break
    kill -0 "$nginx_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$nginx_pid" 2>/dev/null && listening "$listen_port" && break
  wait "$nginx_pid" 2>/dev/null || true
  nginx_pid=
  if ((port == 0 && attempt < 5)) && grep -q 'Address already in use' "$work/error.log" 2>/dev/null; then continue; fi
  echo "serve_cluster: nginx did not start; its error log:" >&2
  tail -n 20 "$work/error.log" >&2 || true
  exit 1
done
echo "serve_cluster: nginx pid $nginx_pid, config $work/nginx.conf, logs in $work"
echo "serve_cluster: ready on http://127.0.0.1:$listen_port"

# 4. Until a signal, or until nginx or a backend exits on its own.
set +e
wait -n "$nginx_pid" "${backend_pids[@]}"
code=$?
for ((i = 0; i < backends; i++)); do
  kill -0 "${backend_pids[i]}" 2>/dev/null || echo "serve_cluster: backend $((i + 1)) exited; its log: $work/backend$((i + 1)).log" >&2
done
kill -0 "$nginx_pid" 2>/dev/null || { echo "serve_cluster: nginx exited" >&2; nginx_pid=; }
exit $((code == 0 ? 1 : code))
