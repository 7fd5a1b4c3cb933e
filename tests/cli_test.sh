#!/usr/bin/env bash
# The rill CLI as a user runs it: exact generated text, the eval contract, exit codes and one-line errors.
set -u
rill=$1
shared=$2
add_chat_template=$3
data=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/data
stories=$shared/models/stories260K/stories260K.gguf
expected=$shared/models/stories260K/expected
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The machine profile goes here, not into the user's ~/.cache; the commands before `rill plan` below
# run without one (every core), as on a first start.
export RILL_CACHE_DIR=$tmp/cache
failures=0
passes=0

pass() { passes=$((passes + 1)); echo "ok: $1"; }
fail() { failures=$((failures + 1)); echo "FAIL: $1"; }
# Text equality allowing one final newline on either side, as the expected files differ in that.
same_text() { cmp -s <(printf '%s' "$(cat "$1")") <(printf '%s' "$(cat "$2")"); }

# Greedy text from BOS alone equals llama2.c's, at 200 and 256 tokens.
for n in 200 256; do
  "$rill" run -m "$stories" -p "" -n $n --temp 0 --no-mmap >"$tmp/out$n.txt" 2>"$tmp/err$n.txt"
  if same_text "$tmp/out$n.txt" "$expected/greedy_n$n.txt"; then pass "greedy text n=$n"; else fail "greedy text n=$n"; fi
done
# Every kernel path this CPU runs, forced by RILL_KERNELS, gives the same greedy text (stories260K is
# F32: float activations on every path). An unknown or unsupported path is a one-line error.
for path in reference generic sse41 avx2 avx512; do
  RILL_KERNELS=$path "$rill" run -m "$stories" -p "" -n 200 --temp 0 >"$tmp/k.txt" 2>"$tmp/k.err"
  code=$?
  if [[ $code == 0 ]]; then
    same_text "$tmp/k.txt" "$expected/greedy_n200.txt" && pass "greedy text on kernel path $path" || fail "greedy text on kernel path $path"
  else
    grep -q "RILL_KERNELS=$path: this CPU cannot run that path" "$tmp/k.err" && pass "kernel path $path refused on this CPU" ||
      fail "kernel path $path: $(cat "$tmp/k.err")"
  fi
done
RILL_KERNELS=avx9 "$rill" run -m "$stories" -p "" -n 4 >/dev/null 2>"$tmp/k.err"
[[ $? == 1 ]] && grep -q "unknown kernel path" "$tmp/k.err" && pass "unknown RILL_KERNELS is an error" ||
  fail "unknown RILL_KERNELS: $(cat "$tmp/k.err")"

grep -q "time to first token" "$tmp/err200.txt" && grep -q "decode" "$tmp/err200.txt" && grep -q "load" "$tmp/err200.txt" &&
  pass "timings on stderr" || fail "timings on stderr"

# eval writes n_tokens x n_vocab float32 logits and a JSON line; 1 and 2 threads give identical bytes.
ids=$(head -c 2000 "$expected/greedy_ids_n200.txt" | tr -s ' \n' ',' | sed 's/,$//' | cut -d, -f1-40)
"$rill" eval -m "$stories" --tokens "1,$ids" -t 1 --out "$tmp/t1.f32" >"$tmp/eval.json" &&
  "$rill" eval -m "$stories" --tokens "1,$ids" -t 2 --out "$tmp/t2.f32" >/dev/null
if cmp -s "$tmp/t1.f32" "$tmp/t2.f32"; then pass "eval logits identical at -t 1 and -t 2"; else fail "eval logits differ between thread counts"; fi
[[ $(stat -c %s "$tmp/t1.f32") == $((41 * 512 * 4)) ]] && pass "eval file size" || fail "eval file size"
grep -q '^{"n_tokens":41,"n_vocab":512,"argmax_last":[0-9]*}$' "$tmp/eval.json" && pass "eval JSON line" || fail "eval JSON line: $(cat "$tmp/eval.json")"
# The greedy ids themselves: the argmax after each prefix is the next expected id.
first=$(cut -d' ' -f1 "$expected/greedy_ids_n200.txt")
"$rill" eval -m "$stories" --tokens 1 --out "$tmp/bos.f32" | grep -q "\"argmax_last\":$first}" && pass "eval argmax after BOS" ||
  fail "eval argmax after BOS"

# Each GEMM backend, forced, evaluates the same 41-token prompt (a GEMM-sized batch; stories260K is
# F32, so every backend is float32 arithmetic on the same values) to the same next token, in pieces
# of 16 too; an unknown backend or an empty micro-batch is refused, naming the flag.
for gemm in native onednn openblas; do
  "$rill" eval -m "$stories" --tokens "1,$ids" --gemm $gemm --out "$tmp/g.f32" >"$tmp/g.json" 2>"$tmp/g.err" &&
    cmp -s <(sed 's/"argmax_last":[0-9]*//' "$tmp/g.json") <(sed 's/"argmax_last":[0-9]*//' "$tmp/eval.json") &&
    grep -q "$(grep -o '"argmax_last":[0-9]*' "$tmp/eval.json")" "$tmp/g.json" && pass "eval with --gemm $gemm" ||
    fail "eval with --gemm $gemm: $(cat "$tmp/g.json" "$tmp/g.err")"
done
"$rill" eval -m "$stories" --tokens "1,$ids" --ubatch 16 --out "$tmp/u.f32" | grep -q "$(grep -o '"argmax_last":[0-9]*' "$tmp/eval.json")" &&
  pass "eval in micro-batches of 16" || fail "eval in micro-batches of 16"

# info names the architecture and the sizes.
"$rill" info -m "$stories" >"$tmp/info.txt" && grep -q "architecture  llama" "$tmp/info.txt" && grep -q "KV cache" "$tmp/info.txt" &&
  pass "info" || fail "info"
"$rill" info -m "$stories" --json | grep -q '"kv_bytes_per_token_f16":640' && pass "info --json" || fail "info --json"
grep -q "prompt scratch .* per thread for GEMM panels" "$tmp/info.txt" && pass "info reports the prompt scratch" ||
  fail "info reports the prompt scratch: $(cat "$tmp/info.txt")"

# Errors: one line on stderr, exit 2 for usage, 1 for everything else; never a crash.
expect_error() {  # expected-code description args...
  local code=$1 what=$2
  shift 2
  "$rill" "$@" >"$tmp/o" 2>"$tmp/e"
  local got=$?
  local lines
  lines=$(wc -l <"$tmp/e")
  if [[ $got == "$code" && $lines == 1 ]] && grep -q "^rill: error: " "$tmp/e"; then
    pass "$what"
  else
    fail "$what (exit $got, $lines lines: $(head -c 300 "$tmp/e"))"
  fi
}
printf 'GGUF\x63\x00\x00\x00' >"$tmp/v99.gguf"
head -c 5000 "$stories" >"$tmp/cut.gguf"
printf 'not a model at all' >"$tmp/junk.gguf"
expect_error 2 "no subcommand"
expect_error 2 "unknown flag" run -m "$stories" --bogus
expect_error 2 "missing model" run -p hi
expect_error 2 "non-numeric -n" run -m "$stories" -n abc
expect_error 2 "negative threads" run -m "$stories" -t -3
expect_error 2 "unknown GEMM backend" run -m "$stories" --gemm cublas
grep -q -- "--gemm" "$tmp/e" && pass "--gemm error names the flag" || fail "--gemm error names the flag: $(cat "$tmp/e")"
expect_error 2 "empty micro-batch" eval -m "$stories" --tokens 1 --out "$tmp/x" --ubatch 0
expect_error 2 "bad token list" eval -m "$stories" --tokens 1,x,3 --out "$tmp/x.f32"
expect_error 1 "token id outside the vocabulary" eval -m "$stories" --tokens 1,99999 --out "$tmp/x.f32"
expect_error 1 "GGUF version 99" run -m "$tmp/v99.gguf"
expect_error 1 "truncated GGUF" info -m "$tmp/cut.gguf"
expect_error 1 "not a GGUF file" info -m "$tmp/junk.gguf"
expect_error 1 "prompt longer than the context" run -m "$stories" -c 4 -p "Once upon a time there was"
grep -q "truncated" <("$rill" info -m "$tmp/cut.gguf" 2>&1) && pass "truncation named" || fail "truncation named"
"$rill" --help | grep -q "run" && pass "--help lists commands" || fail "--help"

# tokenize / detokenize with the model's own tokenizer, on a vocabulary-only file too.
[[ $("$rill" tokenize -m "$stories" "Once upon a time") == "1 403 407 261 378" ]] && pass "tokenize" || fail "tokenize"
[[ $("$rill" tokenize -m "$stories" --no-bos "Once upon a time") == "403 407 261 378" ]] && pass "tokenize --no-bos" || fail "tokenize --no-bos"
bpe=$shared/vocab/ggml-vocab-llama-bpe.gguf
[[ $("$rill" tokenize -m "$bpe" --no-bos --parse-special "<|eot_id|>") == "128009" ]] && pass "tokenize --parse-special" ||
  fail "tokenize --parse-special"
[[ $("$rill" detokenize -m "$bpe" 9906 1917 0) == "Hello world!" ]] && pass "detokenize" || fail "detokenize: $("$rill" detokenize -m "$bpe" 9906 1917 0)"
printf 'caf\xc3\xa9 \xf0\x9f\x99\x82\n' >"$tmp/text.txt"
ids=$("$rill" tokenize -m "$bpe" --no-bos -f "$tmp/text.txt")
[[ $("$rill" detokenize -m "$bpe" $ids) == "$(cat "$tmp/text.txt")" ]] && pass "tokenize -f round-trips" || fail "tokenize -f round-trips"
expect_error 2 "detokenize of a non-id" detokenize -m "$bpe" 12 x
expect_error 2 "detokenize of an id past the vocabulary" detokenize -m "$bpe" 999999

# template renders a conversation exactly as the expected text of a case in shared/chat-templates.
cases=$shared/chat-templates/cases.json
node -e '
  const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))["Qwen-Qwen2.5-7B-Instruct"];
  const fs = require("fs");
  fs.writeFileSync(process.argv[2] + "/qwen.jinja", c.template);
  const k = Object.keys(c.cases).find((k) => c.cases[k].expected !== undefined && c.cases[k].input.add_generation_prompt);
  fs.writeFileSync(process.argv[2] + "/messages.json", JSON.stringify(c.cases[k].input.messages));
  fs.writeFileSync(process.argv[2] + "/expected.txt", c.cases[k].expected);
' "$cases" "$tmp" 2>/dev/null
if [[ -f $tmp/qwen.jinja ]]; then
  "$rill" template --template "$tmp/qwen.jinja" --messages "$tmp/messages.json" --bos "<s>" --eos "</s>" >"$tmp/rendered.txt"
  cmp -s "$tmp/rendered.txt" "$tmp/expected.txt" && pass "template renders as Hugging Face" || fail "template renders as Hugging Face"
fi
echo '{"messages": [' >"$tmp/bad.json"
expect_error 1 "template with malformed JSON" template --template "$tmp/qwen.jinja" --messages "$tmp/bad.json"
expect_error 2 "template without a template" template --messages "$tmp/bad.json"
expect_error 1 "template from a model without one" template -m "$stories" --messages "$tmp/bad.json"

# chat, driven through a pipe: a templated model (stories260K given a Llama-2-style template) and the fallback.
"$add_chat_template" "$stories" "$data/llama2-chat.jinja" "$tmp/stories-chat.gguf"
printf 'Tell me a story.\nMore.\n/save %s\n/reset\n/exit\n' "$tmp/conv.json" |
  "$rill" chat -m "$tmp/stories-chat.gguf" --temp 0 -n 20 -c 512 >"$tmp/chat.out" 2>"$tmp/chat.err"
grep -q "reused from earlier turns" "$tmp/chat.err" && ! grep -q "no chat template" "$tmp/chat.err" && pass "chat with a template" ||
  fail "chat with a template: $(head -c 300 "$tmp/chat.err")"
grep -q '"role": "assistant"' "$tmp/conv.json" 2>/dev/null && grep -q "conversation cleared" "$tmp/chat.out" &&
  pass "chat /save and /reset" || fail "chat /save and /reset"
grep -q " 2[0-9] reused" "$tmp/chat.err" && pass "chat reuses the previous turn's KV cache" || fail "chat KV reuse: $(cat "$tmp/chat.err")"
printf 'Hi.\nAgain.\nOnce more.\n' | "$rill" chat -m "$stories" --temp 0 -n 20 -c 64 >"$tmp/fb.out" 2>"$tmp/fb.err"
grep -q "no chat template" "$tmp/fb.err" && pass "chat fallback is announced" || fail "chat fallback is announced"
grep -q "oldest messages were dropped" "$tmp/fb.err" && pass "chat drops old turns when the context fills" ||
  fail "chat drops old turns: $(cat "$tmp/fb.err")"

# quantize and synth: clear errors, and no file left behind by a full disk or Ctrl-C.
f32=$shared/golden/synth-llama-A.F32.gguf
expect_error 2 "quantize to an unknown type" quantize "$f32" "$tmp/q.gguf" Q7_K
expect_error 2 "quantize onto its own input" quantize "$f32" "$f32" Q4_0
expect_error 2 "synth of an unknown preset" synth --preset llama-99b -o "$tmp/s.gguf"
expect_error 1 "synth with a vocabulary of the wrong size" synth --preset tinyllama-1.1b --vocab "$bpe" -o "$tmp/s.gguf"
[[ ! -e $tmp/s.gguf ]] && pass "no file after a failed synth" || fail "a failed synth left a file"
"$rill" quantize "$f32" "$tmp/q.gguf" Q4_K_M >"$tmp/q.out" 2>&1 && grep -q "RMSE" "$tmp/q.out" && grep -q "Q6_K" "$tmp/q.out" &&
  pass "quantize prints sizes and RMSE per type" || fail "quantize summary: $(tail -5 "$tmp/q.out")"
# A file-size limit stands in for a full disk (SIGXFSZ ignored, so writes fail with EFBIG).
(trap '' XFSZ; ulimit -f 200; exec "$rill" quantize "$f32" "$tmp/full.gguf" Q8_0 --pure) >/dev/null 2>"$tmp/full.err"
code=$?
if [[ $code == 1 ]] && grep -q "disk full" "$tmp/full.err" && ! ls "$tmp"/full.gguf* >/dev/null 2>&1; then
  pass "full disk during quantize: clear error, no file"
else
  fail "full disk during quantize (exit $code): $(cat "$tmp/full.err")"
fi
"$rill" synth --preset tinyllama-1.1b --type Q4_0 -o "$tmp/big.gguf" >/dev/null 2>"$tmp/int.err" &
pid=$!
sleep 2
kill -INT $pid
wait $pid
code=$?
if [[ $code == 1 ]] && grep -q "interrupted: no output file was written" "$tmp/int.err" && ! ls "$tmp"/big.gguf* >/dev/null 2>&1; then
  pass "Ctrl-C during synth: clear message, no file"
else
  fail "Ctrl-C during synth (exit $code): $(tail -c 300 "$tmp/int.err")"
fi
"$rill" synth --preset tiny --type Q4_K_M --seed 5 -o "$tmp/a.gguf" >/dev/null 2>&1
"$rill" synth --preset tiny --type Q4_K_M --seed 5 -t 1 -o "$tmp/b.gguf" >/dev/null 2>&1
"$rill" synth --preset tiny --type Q4_K_M --seed 6 -o "$tmp/c.gguf" >/dev/null 2>&1
cmp -s "$tmp/a.gguf" "$tmp/b.gguf" && ! cmp -s "$tmp/a.gguf" "$tmp/c.gguf" && pass "synth: same seed, same bytes" ||
  fail "synth: same seed, same bytes"
"$rill" run -m "$tmp/a.gguf" -p "" -n 8 --seed 1 >/dev/null 2>&1 && pass "a synth model with the placeholder vocabulary runs" ||
  fail "a synth model with the placeholder vocabulary runs"
"$rill" synth --list | grep -q "llama-3.1-8b" && pass "synth --list" || fail "synth --list"

# Same seed, same text.
a=$("$rill" run -m "$stories" -p "Once upon a time" -n 40 --seed 7 2>/dev/null)
b=$("$rill" run -m "$stories" -p "Once upon a time" -n 40 --seed 7 -t 1 2>/dev/null)
[[ "$a" == "$b" ]] && pass "same seed, same text" || fail "same seed, same text"

# bench: llama-bench's JSON fields, one CSV line per row, and flag errors that name the flag.
"$rill" bench -m "$stories" -p 16 -n 8 -r 2 -t 1 -o json >"$tmp/bench.json" 2>"$tmp/bench.err"
bench_json_ok() {
  if command -v python3 >/dev/null; then
    python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 2
for row in rows:
    for key in ("avg_ts", "n_prompt", "n_gen", "bytes_per_token", "pct_of_bandwidth"):
        assert key in row, key
assert rows[0]["n_prompt"] == 16 and rows[1]["n_gen"] == 8
assert rows[1]["avg_ts"] > 0 and rows[1]["bytes_per_token"] > 0 and rows[1]["pct_of_bandwidth"] > 0
' "$tmp/bench.json" 2>/dev/null
  elif command -v node >/dev/null; then
    node -e '
      const rows = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      const keys = ["avg_ts", "n_prompt", "n_gen", "bytes_per_token", "pct_of_bandwidth"];
      const ok = rows.length === 2 && rows.every((r) => keys.every((k) => k in r)) && rows[0].n_prompt === 16 &&
        rows[1].n_gen === 8 && rows[1].avg_ts > 0 && rows[1].bytes_per_token > 0 && rows[1].pct_of_bandwidth > 0;
      process.exit(ok ? 0 : 1);
    ' "$tmp/bench.json" 2>/dev/null
  else
    [[ $(grep -c '"n_prompt"' "$tmp/bench.json") == 2 ]] && grep -q '"avg_ts"' "$tmp/bench.json" &&
      grep -q '"n_gen"' "$tmp/bench.json" && grep -q '"bytes_per_token"' "$tmp/bench.json" &&
      grep -q '"pct_of_bandwidth"' "$tmp/bench.json"
  fi
}
bench_json_ok && pass "bench -o json: two rows with llama-bench's fields" ||
  fail "bench -o json: $(head -c 300 "$tmp/bench.json") $(head -c 300 "$tmp/bench.err")"
[[ $("$rill" bench -m "$stories" -p 16 -n 8 -r 2 -t 1 -o csv 2>/dev/null | wc -l) == 3 ]] && pass "bench -o csv: header and two rows" ||
  fail "bench -o csv"
expect_error 2 "bench with a non-numeric -p" bench -m "$stories" -p abc
grep -q -- "-p" "$tmp/e" && pass "bench -p error names the flag" || fail "bench -p error names the flag: $(cat "$tmp/e")"
expect_error 2 "bench with -r 0" bench -m "$stories" -r 0

# rill plan: the first call measures this machine and caches the profile; later calls read it.
"$rill" plan --preset tiny --type Q4_0 --json >"$tmp/plan.json" 2>"$tmp/plan.err"
[[ $? == 0 && -s $RILL_CACHE_DIR/machine.json ]] && grep -q "measuring this machine" "$tmp/plan.err" &&
  pass "plan measures the machine once and caches the profile" || fail "plan's first run: $(head -c 300 "$tmp/plan.err")"
node -e '
  const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const ok = p.memory.weights_bytes > 0 && p.memory.kv_cache_bytes === 2 * 2 * 128 * 2 * 512 && p.decode.tokens_per_second > 0 &&
    p.decode.threads >= 1 && p.prefill.time_to_first_token_s > 0 && ["bandwidth", "compute"].includes(p.decode.bound);
  process.exit(ok ? 0 : 1);' "$tmp/plan.json" && pass "plan --json: memory, decode and prefill predictions" ||
  fail "plan --json: $(head -c 400 "$tmp/plan.json")"
"$rill" plan -m "$stories" >"$tmp/plan.txt" 2>"$tmp/plan.err"
[[ $? == 0 ]] && ! grep -q "measuring" "$tmp/plan.err" && grep -q "^decode .*tokens/s with" "$tmp/plan.txt" &&
  grep -q "^first token" "$tmp/plan.txt" && grep -q "bound by" "$tmp/plan.txt" &&
  pass "plan -m reads the cached profile and says what bounds each phase" || fail "plan -m: $(cat "$tmp/plan.err" "$tmp/plan.txt" | head -c 400)"
"$rill" plan --preset llama-3.1-8b --fit 8 --json >"$tmp/fit.json" 2>/dev/null
node -e '
  const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const pick = p.types.find((t) => t.type === p.recommended);
  process.exit(pick && pick.total_bytes <= 8e9 && pick.fits && p.reason.startsWith(p.recommended + ":") ? 0 : 1);' "$tmp/fit.json" &&
  pass "plan --fit 8 recommends a type whose weights, KV cache and scratch fit in 8 GB" || fail "plan --fit: $(head -c 300 "$tmp/fit.json")"
"$rill" plan --preset llama-3.1-8b --fit 1 >"$tmp/fit.txt" 2>/dev/null
[[ $? == 1 ]] && grep -q "nothing fits" "$tmp/fit.txt" && pass "plan --fit with too little RAM says nothing fits" || fail "plan --fit 1"
echo '{"version": ' >"$RILL_CACHE_DIR/machine.json"
"$rill" plan --preset tiny --type Q8_0 >/dev/null 2>"$tmp/plan.err"
[[ $? == 0 ]] && grep -q "not valid JSON" "$tmp/plan.err" && "$rill" plan --preset tiny --type Q8_0 2>&1 >/dev/null | { ! grep -q measuring; } &&
  pass "a damaged profile is measured again and replaced" || fail "damaged profile: $(head -c 300 "$tmp/plan.err")"
"$rill" plan --remeasure --json >"$tmp/machine.json" 2>/dev/null && node -e '
  const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  process.exit(p.read_gbps.length === p.thread_counts.length && Object.keys(p.types).length === 25 ? 0 : 1);' "$tmp/machine.json" &&
  pass "plan --remeasure alone prints the machine profile" || fail "plan --remeasure: $(head -c 300 "$tmp/machine.json")"
expect_error 2 "plan with both -m and --preset" plan -m "$stories" --preset tiny --type Q4_0
expect_error 2 "plan with an unknown preset" plan --preset llama-9 --type Q4_0
expect_error 2 "plan with an unknown type" plan --preset tiny --type Q9_9
expect_error 2 "plan with a preset and no type" plan --preset tiny
expect_error 2 "plan --target-tps without --fit" plan --preset tiny --type Q4_0 --target-tps 5
expect_error 2 "bench --plot without --sweep" bench -m "$stories" --plot "$tmp/x.svg"
"$rill" bench -m "$stories" -p 0 -n 8 -r 1 -t 1 --sweep ctx --depths 0,16 --plot "$tmp/ctx.svg" >/dev/null 2>&1
[[ $(grep -c "<circle" "$tmp/ctx.svg" 2>/dev/null) -ge 3 ]] && grep -q "tg8 measured" "$tmp/ctx.svg" && grep -q "tg8 ceiling" "$tmp/ctx.svg" &&
  pass "bench --sweep ctx --plot writes an SVG with measured points and the ceiling" || fail "bench --plot: $(head -c 200 "$tmp/ctx.svg")"

# Constrained output: a schema or grammar holds sampled text to it, and bad ones are one-line errors.
echo '{"type": "object", "properties": {"name": {"enum": ["Lily", "Tom"]}, "age": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["name", "age"]}' >"$tmp/person.json"
"$rill" run -m "$stories" -p "Lily" -n 100 --seed 3 --json-schema "$tmp/person.json" 2>/dev/null >"$tmp/person.out"
node -e '
  const v = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  process.exit(["Lily", "Tom"].includes(v.name) && Number.isInteger(v.age) && v.age >= 1 && v.age <= 9 && Object.keys(v).length === 2 ? 0 : 1);' "$tmp/person.out" &&
  pass "run --json-schema prints JSON that validates" || fail "run --json-schema: $(head -c 300 "$tmp/person.out")"
printf 'root ::= ("yes" | "no") "."\n' >"$tmp/yesno.gbnf"
"$rill" run -m "$stories" -p "Is it" -n 20 --seed 1 --grammar "$tmp/yesno.gbnf" 2>/dev/null >"$tmp/yesno.out"
grep -qxE '(yes|no)\.' "$tmp/yesno.out" && pass "run --grammar holds the text to a GBNF grammar" || fail "run --grammar: $(head -c 200 "$tmp/yesno.out")"
printf 'root ::= item\n' >"$tmp/bad.gbnf"
expect_error 1 "a grammar with an undefined rule" run -m "$stories" -p x --grammar "$tmp/bad.gbnf"
grep -q "'item' is used but never defined" "$tmp/e" && pass "the grammar error names the rule" || fail "grammar error: $(cat "$tmp/e")"
echo '{"type": "string", "format": "email"}' >"$tmp/email.json"
expect_error 1 "a schema with an unsupported format" run -m "$stories" -p x --json-schema "$tmp/email.json"
grep -q '"email" is not supported' "$tmp/e" && pass "the schema error names the format" || fail "schema error: $(cat "$tmp/e")"
expect_error 2 "--grammar and --json-schema together" run -m "$stories" -p x --grammar "$tmp/yesno.gbnf" --json-schema "$tmp/person.json"

# rill serve's serving flags: --help teaches them, bad values are usage errors before the model loads.
"$rill" serve --help >"$tmp/serve.help" 2>&1
for flag in --max-queue --prefill-chunk --prefill-slowdown --no-cache-prompt --cache-ram --slot-save-path --drain-timeout /metrics; do
  grep -q -- "$flag" "$tmp/serve.help" || fail "serve --help does not mention $flag"
done
pass "serve --help names the serving flags and routes"
expect_error 2 "a prefill chunk of 0" serve -m "$stories" --prefill-chunk 0
expect_error 2 "a prefill slowdown of 1 (no room for a prompt)" serve -m "$stories" --prefill-slowdown 1
expect_error 2 "a negative queue" serve -m "$stories" --max-queue -1
expect_error 2 "a slot folder that does not exist" serve -m "$stories" --slot-save-path "$tmp/no/such/dir"
expect_error 2 "a negative drain timeout" serve -m "$stories" --drain-timeout -5

# KV cache types: --kv-type for both, llama.cpp's -ctk/-ctv (and long names) for each; q8_0 halves the bytes.
golden=$shared/golden/synth-llama-A.Q8_0.gguf  # head size 64: every KV type fits
"$rill" info -m "$golden" --json | grep -q '"kv_type":"f16","kv_bytes_per_token":1024,' && pass "info counts f16 keys and values" ||
  fail "info f16 KV bytes: $("$rill" info -m "$golden" --json)"
"$rill" info -m "$golden" --kv-type q8_0 --json | grep -q '"kv_type":"q8_0","kv_bytes_per_token":544,' &&
  pass "info --kv-type q8_0: 544 bytes per token against f16's 1024" || fail "info q8_0 KV bytes: $("$rill" info -m "$golden" --kv-type q8_0 --json)"
"$rill" info -m "$golden" -ctk q8_0 >"$tmp/kv.txt" && grep -q "KV cache .*(q8_0 K / f16 V; 784 bytes)" "$tmp/kv.txt" &&
  grep -q "0.77x the f16 cache" "$tmp/kv.txt" && pass "info -ctk q8_0 counts the keys alone as q8_0" || fail "info -ctk: $(cat "$tmp/kv.txt")"
"$rill" info -m "$golden" --cache-type-k q4_0 --cache-type-v q4_0 | grep -q "KV cache .*(q4_0; 288 bytes)" &&
  pass "info --cache-type-k/-v q4_0" || fail "info --cache-type-k/-v q4_0"
"$rill" info -m "$golden" | grep -q "q8_0 (--kv-type q8_0): 544 B per token" && pass "info tells what q8_0 would take" || fail "info q8_0 hint"
for types in "--kv-type bf16" "-ctk q8_0 -ctv q8_0" "-ctk q4_0 -ctv f16" "--kv-type f32 -ctv q8_0"; do
  # shellcheck disable=SC2086
  "$rill" run -m "$golden" -p "Once upon a time" -n 8 --temp 0 $types >"$tmp/kv.out" 2>"$tmp/kv.err" && [[ -s $tmp/kv.out ]] &&
    pass "run $types" || fail "run $types: $(cat "$tmp/kv.err")"
done
"$rill" run --help | grep -q "q8_0 (ggml's 8-bit blocks: 0.53x f16's memory per token" && "$rill" run --help | grep -q -- "--cache-type-k" &&
  pass "run --help teaches the KV types" || fail "run --help KV types"
"$rill" plan --preset llama-3.2-1b --type Q4_0 --kv-type q8_0 --json >"$tmp/plan-kv.json" 2>/dev/null && grep -q '"kv_type": "q8_0"' "$tmp/plan-kv.json" &&
  pass "plan --kv-type q8_0" || fail "plan --kv-type q8_0: $(head -c 300 "$tmp/plan-kv.json")"
expect_error 2 "an unknown KV type" run -m "$stories" -p x --kv-type q9
grep -q "unknown KV cache type 'q9' (use f32, f16, bf16, q8_0 or q4_0)" "$tmp/e" && pass "the KV type error lists the choices" || fail "KV type error: $(cat "$tmp/e")"
expect_error 2 "an unknown -ctv type" run -m "$stories" -p x -ctv int4
expect_error 1 "q8_0 keys on a model with head size 8" run -m "$stories" -p x -ctk q8_0
grep -q "KV cache type q8_0 needs a head size that is a multiple of 32 .* head size is 8" "$tmp/e" &&
  pass "the head-size error names the type and the head size" || fail "head-size error: $(cat "$tmp/e")"
expect_error 1 "info with q4_0 values on a model with head size 8" info -m "$stories" --cache-type-v q4_0

# perplexity: llama-perplexity's chunks and numbers; tests/data/stories260K.perplexity.json holds the
# perplexity llama.cpp's own log-probs give on the same chunks (bench/perplexity_vs_llamacpp.mjs). rill's
# float path matches llama.cpp's per-token log-probs within about 1e-5, so PPL agrees within 1e-4 relative.
ppl_text=$shared/models/stories260K/expected/greedy_n256.txt
"$rill" perplexity -m "$stories" -f "$ppl_text" -c 64 --json >"$tmp/ppl.json" 2>/dev/null && node -e '
  const ours = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")), theirs = require(process.argv[2]);
  process.exit(ours.tokens === theirs.positions.length && Math.abs(ours.ppl / theirs.ppl - 1) < 1e-4 ? 0 : 1);' \
  "$tmp/ppl.json" "$data/stories260K.perplexity.json" &&
  pass "perplexity on stories260K is llama.cpp's within 1e-4" || fail "perplexity: $(cat "$tmp/ppl.json")"
"$rill" perplexity -m "$stories" -f "$ppl_text" -c 64 >"$tmp/ppl.out" 2>"$tmp/ppl.err" &&
  grep -q '^\[1\][0-9.]*,\[2\]' "$tmp/ppl.out" && grep -q '^Final estimate: PPL = [0-9.]* +/- [0-9.]*$' "$tmp/ppl.err" &&
  pass "perplexity prints llama-perplexity's running and final lines" || fail "perplexity report: $(cat "$tmp/ppl.out" "$tmp/ppl.err" | head -c 300)"
"$rill" perplexity -m "$stories" -f "$ppl_text" -c 64 --kl-divergence-base "$tmp/base.kld" >/dev/null 2>&1 &&
  "$rill" perplexity -m "$stories" -c 64 --kl-divergence-base "$tmp/base.kld" --kl-divergence --json >"$tmp/kld.json" 2>/dev/null &&
  node -e 'const k = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    process.exit(k.tokens === 124 && k.kld_mean < 1e-4 && k.same_top === 1 ? 0 : 1);' "$tmp/kld.json" &&
  pass "a model compared with its own saved log-probs: no divergence, the same top token everywhere" || fail "kl self: $(cat "$tmp/kld.json")"
head -c 1000 "$tmp/base.kld" >"$tmp/cut.kld"
expect_error 1 "perplexity against a truncated base file" perplexity -m "$stories" --kl-divergence-base "$tmp/cut.kld" --kl-divergence
expect_error 1 "perplexity against a file that is not a base" perplexity -m "$stories" --kl-divergence-base "$stories" --kl-divergence
expect_error 2 "perplexity --kl-divergence without a base file" perplexity -m "$stories" --kl-divergence
expect_error 2 "perplexity without a text" perplexity -m "$stories"
expect_error 1 "perplexity on a text shorter than two chunks" perplexity -m "$stories" -f "$ppl_text" -c 512

# imatrix: llama-imatrix's collection. tests/data/stories260K.imatrix.llamacpp.jsonl is what llama.cpp's
# own forward pass collects over the same chunks (scripts/ggml_reference.sh imatrix-collect, float32
# attention without flash attention, as rill's): the same entries and counts, and per-column mean squares
# within 1e-5 relative (measured 1.9e-6 on both, float32 activations after five and two layers); the
# same for the mixture qwen3moe-A (tokens per expert).
cat >"$tmp/imatrix_match.js" <<'JS'
// Exit 0 when rill's entries (rill imatrix --show) are llama.cpp's: the same names and token counts
// (per expert for a mixture), and each column's importance within 1e-5 relative.
const fs = require("fs"), lines = (p) => fs.readFileSync(p, "utf8").trim().split("\n").map(JSON.parse).filter(e => e.name);
const ours = Object.fromEntries(lines(process.argv[2]).map(e => [e.name, e])), theirs = lines(process.argv[3]);
let ok = Object.keys(ours).length === theirs.length;
for (const e of theirs) {
  const m = ours[e.name];
  ok = ok && m && JSON.stringify(m.counts) === JSON.stringify(e.counts) &&
       e.importance.every((v, i) => Math.abs(m.importance[i] - v) <= 1e-5 * v);
}
process.exit(ok ? 0 : 1);
JS
"$rill" imatrix -m "$stories" -f "$ppl_text" -c 64 -o "$tmp/s.imatrix.dat" --output-format dat >"$tmp/imx.out" 2>"$tmp/imx.err" &&
  "$rill" imatrix --in-file "$tmp/s.imatrix.dat" -c 64 --show >"$tmp/s.show" 2>/dev/null &&
  node "$tmp/imatrix_match.js" "$tmp/s.show" "$data/stories260K.imatrix.llamacpp.jsonl" &&
  grep -q '^Final estimate: PPL = 1.7683 ' "$tmp/imx.out" &&
  pass "imatrix on stories260K collects llama.cpp's entries, counts and mean squares (1e-5), with its perplexity" ||
  fail "imatrix vs llama.cpp: $(head -c 300 "$tmp/imx.err")"
moe=$shared/arch/qwen3moe-A.gguf
"$rill" imatrix -m "$moe" -f "$ppl_text" -c 64 -o "$tmp/moe.imatrix.gguf" >/dev/null 2>&1 &&
  "$rill" imatrix --in-file "$tmp/moe.imatrix.gguf" --show >"$tmp/moe.show" 2>/dev/null &&
  node "$tmp/imatrix_match.js" "$tmp/moe.show" "$data/qwen3moe-A.imatrix.llamacpp.jsonl" &&
  pass "imatrix on a mixture counts the tokens each expert saw and its mean squares as llama.cpp does" || fail "imatrix on qwen3moe-A"
"$rill" imatrix --in-file "$tmp/s.imatrix.dat" -c 64 -o "$tmp/s.imatrix.gguf" 2>/dev/null &&
  "$rill" imatrix --in-file "$tmp/s.imatrix.gguf" -o "$tmp/back.dat" --output-format dat 2>/dev/null &&
  "$rill" imatrix --in-file "$tmp/back.dat" -c 64 --show >"$tmp/back.show" 2>/dev/null &&
  node "$tmp/imatrix_match.js" "$tmp/back.show" "$tmp/s.show" &&
  pass "imatrix --in-file converts .dat to GGUF and back with the same importance" || fail "imatrix conversion"
"$rill" imatrix -m "$stories" -f "$ppl_text" -c 64 --no-ppl --json -o "$tmp/np.gguf" >"$tmp/np.json" 2>/dev/null &&
  node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    process.exit(j.entries === 35 && j.format === "gguf" && j.ppl === undefined ? 0 : 1);' "$tmp/np.json" &&
  pass "imatrix --no-ppl --json reports the file without a perplexity" || fail "imatrix json: $(cat "$tmp/np.json")"
expect_error 2 "imatrix with neither a text nor input files" imatrix -m "$stories"
expect_error 2 "imatrix with a text but no model" imatrix -f "$ppl_text"
expect_error 1 "imatrix on a text shorter than two chunks" imatrix -m "$stories" -f "$ppl_text" -c 512 -o "$tmp/x.gguf"
expect_error 1 "imatrix --in-file of a model, not an imatrix" imatrix --in-file "$stories" -o "$tmp/x.gguf"

echo "$passes passed, $failures failed"
[[ $failures == 0 ]]
