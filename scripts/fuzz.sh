#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan+UBSan) and fuzzes each for its share of the time.
#   scripts/fuzz.sh [SECONDS [HARNESS...]]   default 600 s over every harness; corpora grow in build-fuzz/corpus
# Harnesses (tests/fuzz/): gguf (GGUF reader, model validator, vocabularies, tokenizers), jinja (chat
# templates with their messages and tools), request (the server's request bodies for every endpoint).
# Exits non-zero when a harness finds a crash, a leak, a sanitizer report or a time-out; the input that
# caused it is left in build-fuzz/ as crash-*, leak-* or timeout-*.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-600}
shift || true
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(gguf jinja request grammar plan reply kld)
for h in "${harnesses[@]}"; do
  [[ -f tests/fuzz/${h}_fuzz.cpp ]] || { echo "fuzz.sh: no harness '$h' (gguf, jinja, request, grammar, plan, reply, kld)" >&2; exit 2; }
done
shared=${RILL_SHARED:-$PWD/../shared}
out=build-fuzz

[[ -f $out/build.ninja ]] || cmake -S . -B "$out" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRILL_SANITIZE=ON -DRILL_FUZZ=ON -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_BENCH=OFF \
  -DRILL_SHARED_DIR="$shared" >/dev/null
cmake --build "$out" --target fuzz_seeds "${harnesses[@]/%/_fuzz}"
"$out/bin/fuzz_seeds" "$out/seeds" "$shared"

declare -A max_len=([gguf]=65536 [jinja]=32768 [request]=16384 [grammar]=16384 [plan]=16384 [reply]=4096 [kld]=16384)  # whole files, real templates, real bodies
share=$((seconds / ${#harnesses[@]}))
((share > 0)) || share=1
failed=()
for h in "${harnesses[@]}"; do
  mkdir -p "$out/corpus/$h"
  dict=()
  [[ -f tests/fuzz/$h.dict ]] && dict=(-dict="tests/fuzz/$h.dict")
  echo "== fuzz $h for $share s"
  code=0
  # Inputs that once found a bug (tests/fuzz/regressions/) are run first, with the seeds.
  regressions=()
  [[ -d tests/fuzz/regressions/$h ]] && regressions=("tests/fuzz/regressions/$h")
  "$out/bin/${h}_fuzz" -max_total_time="$share" -max_len="${max_len[$h]}" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$out/" "${dict[@]}" "$out/corpus/$h" "$out/seeds/$h" "${regressions[@]}" \
    >"$out/$h.log" 2>&1 || code=$?
  # The final stats and, on a finding, the report before them.
  if ((code)); then
    grep -m1 -A40 -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==ERROR" "$out/$h.log" || tail -n 40 "$out/$h.log"
    failed+=("$h")
  fi
  grep -E "^(#[0-9]+.*DONE|stat::|INFO: seed corpus|Done [0-9]+ runs)" "$out/$h.log" || tail -n 5 "$out/$h.log"
done
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in: ${failed[*]} (inputs in $out/, logs in $out/<harness>.log)" >&2
  exit 1
fi
echo "fuzz.sh: ${harnesses[*]}: no findings in $seconds s"
