#!/usr/bin/env bash
# Conversations with tools, tool calls and tool results, rendered by rill's Jinja engine (rill
# template) and by Jinja2 configured as Hugging Face transformers configures it
# (tests/tools/hf_render.py), byte for byte, for every template in ../shared/chat-templates that
# takes tools. Debian's python3-jinja2 is the reference; without it the test is skipped (77).
#   tests/tool_templates_test.sh RILL_BINARY SHARED_DIR
set -u
rill=$1
shared=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=/usr/bin/python3
if ! "$python" -c 'import jinja2' 2>/dev/null; then
  echo "skip: Debian's python3-jinja2 is not installed (scripts/setup.sh installs it)"
  [[ -n ${CI:-} ]] && exit 1
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf --one-file-system "$tmp"' EXIT

# One conversation per shape: a call and its result, then a second turn with another call, ending
# on the user or on a tool result (the model's next turn follows a tool result).
cat >"$tmp/tools.json" <<'JSON'
[{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
 {"type": "function", "function": {"name": "get_time", "description": "Local time in a zone",
  "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}]
JSON
"$python" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
tools = json.load(open(f"{tmp}/tools.json"))
call1 = {"id": "a1b2c3d4e", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
call2 = {"id": "f5g6h7i8j", "type": "function", "function": {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}}
turns = [
    {"role": "system", "content": "You are a helpful assistant with tools."},
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [call1]},
    {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
    {"role": "assistant", "content": "It is 21 °C and clear in Paris."},
    {"role": "user", "content": "And what time is it there?"},
]
json.dump({"messages": turns, "tools": tools, "add_generation_prompt": True}, open(f"{tmp}/ends_on_user.json", "w"), ensure_ascii=False)
more = turns + [{"role": "assistant", "content": "", "tool_calls": [call2]},
                {"role": "tool", "tool_call_id": "f5g6h7i8j", "name": "get_time", "content": "14:05"}]
json.dump({"messages": more, "tools": tools, "add_generation_prompt": True}, open(f"{tmp}/ends_on_tool.json", "w"), ensure_ascii=False)
PY
"$python" - "$shared/chat-templates/cases.json" "$tmp" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
with open(f"{sys.argv[2]}/names", "w") as names:
    for name, case in cases.items():
        if "tools" in case["template"]:
            open(f"{sys.argv[2]}/{name}.jinja", "w").write(case["template"])
            names.write(name + "\n")
PY

passes=0
failures=0
while read -r name; do
  for conversation in ends_on_user ends_on_tool; do
    "$python" "$here/tools/hf_render.py" "$tmp/$name.jinja" "$tmp/$conversation.json" "<s>" "</s>" >"$tmp/hf.txt" 2>"$tmp/hf.err"
    hf=$?
    "$rill" template --template "$tmp/$name.jinja" --messages "$tmp/$conversation.json" --bos "<s>" --eos "</s>" >"$tmp/rill.txt" 2>"$tmp/rill.err"
    ours=$?
    if ((hf != 0)); then
      # The template refuses the conversation: rill must refuse it too.
      if ((ours != 0)); then passes=$((passes + 1)); echo "ok: $name $conversation: both refuse ($(tail -n1 "$tmp/hf.err"))"
      else failures=$((failures + 1)); echo "FAIL: $name $conversation: Jinja2 refuses, rill renders"; tail -n3 "$tmp/hf.err"; fi
    elif cmp -s "$tmp/hf.txt" "$tmp/rill.txt"; then
      passes=$((passes + 1)); echo "ok: $name $conversation ($(wc -c <"$tmp/hf.txt") bytes identical)"
    else
      failures=$((failures + 1)); echo "FAIL: $name $conversation differs from Jinja2's rendering:"
      cat "$tmp/rill.err"; diff <(cat "$tmp/hf.txt") <(cat "$tmp/rill.txt") | head -20
    fi
  done
done <"$tmp/names"
echo "$passes passed, $failures failed"
((failures == 0 && passes > 0))
