#!/usr/bin/env bash
# ctest's entry to the server tests: installs OpenAI's Node package from the lock file if needed,
# then runs the server tests against the given rill binary.
#   tests/server/run.sh RILL_BINARY SHARED_DIR ADD_CHAT_TEMPLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/node_deps.sh"
node_deps_ready "$here" "the server tests"
cd "$here"
RILL_BIN=$1 RILL_SHARED=$2 RILL_ADD_TEMPLATE=$3 exec node --test --test-concurrency=1 --test-reporter=spec server.test.mjs structured.test.mjs serving.test.mjs
