# Sourced by the server test scripts: skips (77) without Node.js, fails under CI, and installs the
# tests' Node packages from the lock file once, under a lock so two tests never install at once.
#   node_deps_ready DIR WHAT
node_deps_ready() {
  local dir=$1 what=$2
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "$what needs Node.js and npm (scripts/setup.sh installs them)" >&2
    [[ -n ${CI:-} ]] && exit 1
    exit 77
  fi
  (
    flock 9
    if [[ ! -f $dir/node_modules/openai/package.json || ! -f $dir/node_modules/parse-prometheus-text-format/package.json ]]; then
      cd "$dir" && npm ci --no-audit --no-fund --loglevel=error
    fi
  ) 9>"${TMPDIR:-/tmp}/rill-server-tests-npm.lock"
}
