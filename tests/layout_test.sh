#!/usr/bin/env bash
# The layout's rules that the compiler cannot see (rill_expose already makes an include against the
# allowed direction "No such file"): every include in runtime/ names its folder from the top, so no
# relative path can reach around the rule; no source sits in runtime/ itself; no file is over 1,000 lines.
#   tests/layout_test.sh SOURCE_DIR
set -u
cd "$1"
passes=0
failures=0
check() {  # NAME, then the offending lines on stdin: none is a pass
  local name=$1 found=0 line
  while IFS= read -r line; do
    echo "FAIL: $name: $line"
    found=1
  done
  if ((found)); then failures=$((failures + 1)); else passes=$((passes + 1)); echo "ok: $name"; fi
}

check 'every include in runtime/ names its folder from the top ("runtime/<concern>/x.h")' < <(grep -rnE '^#include "' runtime |
  grep -vE '#include "(runtime(/[a-z_]+)+|quant|simd|include)/[a-z_0-9]+\.(h|hpp|inl)"[[:space:]]*(//.*)?$')
check "runtime/ itself holds only build files" < <(find runtime -maxdepth 1 -type f ! -name CMakeLists.txt)
check "no file is over 1,000 lines" < <(find runtime simd quant apps include -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \
  -o -name '*.inl' \) -exec wc -l {} + | awk '$2 != "total" && $1 > 1000 { print $2 " has " $1 " lines" }')

echo "$passes passed, $failures failed"
((failures == 0))
