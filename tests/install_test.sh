#!/usr/bin/env bash
# The library as an app developer gets it: `cmake --install` into a temporary prefix, librill.so
# exporting only rill_* with a versioned SONAME, then the examples built as a separate CMake project
# with find_package(rill) and run, and a C program built with pkg-config's flags alone.
#   tests/install_test.sh BUILD_DIR SHARED_DIR [--sanitize]
set -euo pipefail
build=$1
model=$2/models/stories260K/stories260K.gguf
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
flags=()
if [[ ${3:-} == --sanitize ]]; then
  # An instrumented librill.so needs the sanitizer runtimes loaded first, by the program itself.
  san="-fsanitize=address,undefined"
  flags=(-DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(find "$prefix" -name 'librill.so' | head -1)
[[ -n $lib ]] || { echo "FAIL: librill.so not installed" >&2; exit 1; }
libdir=$(dirname "$lib")
for f in include/rill.h include/rill.hpp bin/rill; do
  [[ -e $prefix/$f ]] || { echo "FAIL: $f not installed" >&2; exit 1; }
done

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[[ $soname == librill.so.0 ]] || { echo "FAIL: SONAME is '$soname', expected librill.so.0" >&2; exit 1; }
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -e '^rill_' -e '^RILL_0$' || true)
if [[ -n $others ]]; then
  echo "FAIL: librill.so exports symbols besides rill_*:" >&2
  echo "$others" | head -20 >&2
  exit 1
fi
echo "ok: $soname exports $(nm -D --defined-only "$lib" | grep -c ' T rill_') rill_* functions and nothing else"

cmake -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release "${flags[@]}" >/dev/null
cmake --build "$tmp/examples" >/dev/null
"$tmp/examples/simple" "$model" "Tell me a story" > "$tmp/simple.out"
[[ -s $tmp/simple.out ]] || { echo "FAIL: the C example printed nothing" >&2; exit 1; }
echo "ok: examples/simple.c (find_package) wrote: $(head -c 80 "$tmp/simple.out")"
"$tmp/examples/desktop" "$model" > "$tmp/desktop.out"
grep -q "cancelled" "$tmp/desktop.out" || { echo "FAIL: the C++ example's cancel button did not cancel" >&2; cat "$tmp/desktop.out" >&2; exit 1; }
echo "ok: examples/desktop.cpp generated on a thread and was cancelled"

export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c99 ${san:-} "$src/examples/simple.c" $(pkg-config --cflags --libs rill) -Wl,-rpath,"$libdir" -o "$tmp/simple-pc"
"$tmp/simple-pc" "$model" "Hello" > /dev/null
echo "ok: pkg-config --cflags --libs rill builds and links the C example"
