#!/usr/bin/env bash
# Builds the GGUF reader's libFuzzer harness with clang (ASan+UBSan) and fuzzes it.
#   scripts/fuzz.sh [SECONDS]    default 600; the corpus grows in build-fuzz/corpus
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-600}
out=build-fuzz
mkdir -p "$out/corpus" "$out/seeds"

flags=(-std=c++20 -O1 -g -I. -fsanitize=address,undefined -fno-sanitize-recover=undefined)
sources=(runtime/gguf.cpp runtime/file_bytes.cpp runtime/model.cpp runtime/vocab.cpp runtime/pretokenize.cpp
  runtime/tokenizer.cpp runtime/tokenizer_spm.cpp runtime/tokenizer_bpe.cpp runtime/tokenizer_wpm.cpp quant/dequantize.cpp
  quant/interleave.cpp)
clang++ "${flags[@]}" -fsanitize=fuzzer tests/fuzz/gguf_fuzz.cpp "${sources[@]}" -lpcre2-8 -licuuc -o "$out/gguf_fuzz"
clang++ -std=c++20 -O1 tests/fuzz/make_seeds.cpp -o "$out/make_seeds"
"$out/make_seeds" "$out/seeds"

# Each input is a whole file in memory: 64 KiB leaves room for real headers, arrays and tensor data.
"$out/gguf_fuzz" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  "$out/corpus" "$out/seeds" 2>&1 | tail -n 25
