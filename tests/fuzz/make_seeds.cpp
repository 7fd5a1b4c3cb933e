// Writes each fuzz harness's starting corpus: small valid GGUF files; every reference chat template
// with each of its conversations (../shared/chat-templates/cases.json) and a short template per
// builtin and statement; and request bodies of each
// endpoint, plain and with every field the server reads; grammars and schemas for the grammar engine.
//   fuzz_seeds OUT_DIR SHARED_DIR     writes OUT_DIR/gguf, OUT_DIR/jinja and OUT_DIR/request
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../gguf_builder.h"

namespace {

bool write(const std::filesystem::path& path, const void* bytes, size_t size) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(bytes, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

bool write_text(const std::filesystem::path& path, const std::string& text) { return write(path, text.data(), text.size()); }

bool gguf_seeds(const std::filesystem::path& dir) {
    rill::test::GgufBuilder meta;
    meta.kv_u32("general.alignment", 64).kv_f32_array("f", {1, 2}).kv_i32_array("i", {3}).kv_bool("b", true)
        .kv_string_array("s", {"a", "bc"}).tensor("q", {32, 2}, 2, std::vector<uint8_t>(36));
    const auto llama = rill::test::tiny_llama().bytes();
    const auto metadata = meta.bytes();
    bool ok = write(dir / "tiny_llama.gguf", llama.data(), llama.size()) && write(dir / "metadata.gguf", metadata.data(), metadata.size());
    // Each newer family's keys and tensors, so mutations start from every description path.
    for (const char* family : {"qwen3", "qwen3-yarn", "gemma3", "phi3", "smollm3", "olmo2", "granite", "qwen3moe", "gpt-oss"}) {
        const auto bytes = rill::test::tiny_family(family).bytes();
        ok = ok && write(dir / (std::string("tiny_") + family + ".gguf"), bytes.data(), bytes.size());
    }
    return ok;
}

// The harness's input: template source, NUL, the case's input object.
bool jinja_seeds(const std::filesystem::path& dir, const std::filesystem::path& cases_file) {
    std::ifstream in(cases_file);
    std::stringstream text;
    text << in.rdbuf();
    const auto all = nlohmann::ordered_json::parse(text.str(), nullptr, false);
    if (!all.is_object()) return false;
    int n = 0;
    for (const auto& [model, entry] : all.items()) {
        const std::string source = entry.at("template").get<std::string>();
        for (const auto& [name, c] : entry.at("cases").items()) {
            if (!write_text(dir / (model + "." + name), source + std::string(1, '\0') + c.at("input").dump())) return false;
            ++n;
        }
    }
    return n > 0;
}

// One small template per builtin (filter, test, string and dict method, global) and statement, on
// values of every kind: mutations of a short template reach each builtin's edge cases (an empty list,
// a wrong type, an odd argument) far sooner than mutations of a long real template do.
bool builtin_seeds(const std::filesystem::path& dir) {
    const char* values[] = {"messages", "[3, 1, 2]", "\"Hi there\"", "{\"b\": 2, \"a\": 1}", "7", "none", "messages[0]"};
    const char* filters[] = {"abs", "attr('role')", "capitalize", "count", "default('x')", "escape", "first", "float",
                             "indent(2)", "int", "items", "join(', ')", "last", "length", "list", "lower",
                             "map(attribute='role')", "reject('none')", "rejectattr('role', 'equalto', 'user')",
                             "replace('a', 'b')", "reverse", "safe", "select('string')",
                             "selectattr('role', 'equalto', 'user')", "sort", "string", "title", "tojson", "trim",
                             "unique", "upper", "sort(attribute='role', reverse=true)", "tojson(indent=2)"};
    const char* tests[] = {"boolean", "callable", "defined", "divisibleby 2", "eq 1", "even", "false", "float",
                           "in [1, 2]", "integer", "iterable", "mapping", "none", "number", "odd", "sameas none",
                           "sequence", "string", "true", "undefined", "lt 3", "ge 3"};
    const char* methods[] = {"strip()", "lstrip('H')", "rstrip()", "split(' ')", "rsplit(' ', 1)", "startswith('H')",
                             "endswith('e')", "upper()", "lower()", "title()", "capitalize()", "replace('e', 'E')",
                             "find('t')", "join(['a', 'b'])", "items()", "keys()", "values()", "get('a')"};
    const char* statements[] = {
        "{% for m in messages %}{{ loop.index }}{{ m.role }}{% if loop.last %}.{% endif %}{% endfor %}",
        "{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% else %}empty{% endfor %}",
        "{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
        "{% macro m(a, b=2) %}{{ a ~ b }}{{ caller() if caller is defined }}{% endmacro %}{{ m(1) }}{% call m(3) %}x{% endcall %}",
        "{% filter upper %}text{% endfilter %}{% set x %}block{% endset %}{{ x }}",
        "{{ messages[1:] }}{{ 'abc'[::-1] }}{{ [1, 2, 3][-1] }}{{ 2 ** 10 // 3 % 5 }}{{ 1 if true else 2 }}",
        "{{ raise_exception('no') if messages|length > 5 }}{{ strftime_now('%Y-%m-%d') }}{{ dict(a=1).a }}",
        "{% for m in messages if m.role != 'system' %}{% if loop.index0 is even %}{% continue %}{% endif %}{% break %}{% endfor %}",
        "{{ tools|tojson if tools is defined }}{{ bos_token ~ eos_token }}{{ add_generation_prompt }}",
        "{#- comment -#}\n  {%- if messages %} {{- 'x' -}} {% elif none %}y{% else %}z{% endif %}",
    };
    int n = 0;
    auto seed = [&](const std::string& text) { return write_text(dir / ("builtin" + std::to_string(n++)), text); };
    for (const char* v : values) {
        for (const char* f : filters)
            if (!seed(std::string("{{ ") + v + "|" + f + " }}")) return false;
        for (const char* t : tests)
            if (!seed(std::string("{{ ") + v + " is " + t + " }}")) return false;
        for (const char* m : methods)
            if (!seed(std::string("{{ ") + v + "." + m + " }}")) return false;
    }
    for (const char* st : statements)
        if (!seed(st)) return false;
    return true;
}

bool request_seeds(const std::filesystem::path& dir) {
    const char* bodies[] = {
        R"({"model":"stories","messages":[{"role":"user","content":"Hello"}]})",
        R"({"model":"stories","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]},)"
        R"({"role":"assistant","content":"Hello!"},{"role":"developer","content":null}],"temperature":0.7,"top_p":0.9,"top_k":40,)"
        R"("min_p":0.05,"presence_penalty":0.5,"frequency_penalty":-0.5,"repeat_penalty":1.1,"seed":7,"max_tokens":16,)"
        R"("max_completion_tokens":8,"n":1,"stop":["\n","END"],"ignore_eos":false,"stream":true})",
        R"({"model":"stories","prompt":"Once upon a time","max_tokens":32,"stop":"\n","stream":false,"echo":false})",
        R"({"model":"stories","prompt":["Once"],"temperature":0,"seed":-1})",
        R"({"model":"stories","input":"A sentence to embed.","encoding_format":"base64"})",
        R"({"model":"stories","input":["one","two",""],"encoding_format":"float"})",
        R"({"model":"other","messages":[]})",
        R"({"model":"stories","messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"a1","type":"function",)"
        R"("function":{"name":"w","arguments":"{\"c\":1}"}}]},{"role":"tool","tool_call_id":"a1","content":"21"}],"tools":[{"type":"function",)"
        R"("function":{"name":"w","parameters":{"type":"object","properties":{"c":{"type":"integer"}}}}}],"tool_choice":"required",)"
        R"("parallel_tool_calls":false,"logprobs":true,"top_logprobs":3,"reasoning_effort":"low","chat_template_kwargs":{"enable_thinking":false}})",
        R"({"model":"stories","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],)"
        R"("tool_choice":{"type":"function","function":{"name":"f"}}})",
        R"({"model":"stories","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":)"
        R"({"name":"s","schema":{"type":"array","items":{"type":"string","pattern":"^a+$"},"maxItems":2},"strict":true}}})",
        R"({"model":"stories","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})",
        R"({"model":"stories","prompt":"x","grammar":"root ::= [a-z]+","logprobs":2})",
        R"({"model":"stories","prompt":"x","json_schema":{"enum":[1,2]}})",
        R"({"model":"stories","prompt":"x","cache_prompt":false})",
        R"({"content":"Once upon a time <s>","add_special":true,"parse_special":true,"with_pieces":true})",
        R"({"tokens":[1,403,407,2,511]})",
        R"({"filename":"slot-0.bin"})",
    };
    int n = 0;
    for (const char* body : bodies)
        if (!write_text(dir / ("body" + std::to_string(n++) + ".json"), body)) return false;
    return true;
}

}  // namespace

// GBNF grammars and JSON schemas of each kind the engine reads, each with a text to match.
bool grammar_seeds(const std::filesystem::path& dir) {
    const char* gbnf[][2] = {
        {"root ::= (\"a\" | [b-d]+) \"!\"?", "bcd!"},
        {"root ::= item (\",\" item){0,3}\nitem ::= [0-9]{1,3} | \"(\" root \")\"", "1,(2,33),4"},
        {"root ::= [^\"\\\\]* [α-ω]{2} . # comment", "xyαβ€"},
        {"root ::= \"\\x41\\u00e9\\U0001F600\" | \"\"", "A\xC3\xA9"},
    };
    const char* schemas[][2] = {
        {R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 4}, "b": {"type": "integer", "minimum": -5, "maximum": 300}}, "required": ["a"]})", R"({"a": "xy", "b": 12})"},
        {R"({"anyOf": [{"type": "array", "items": {"enum": [1, "x", null]}, "maxItems": 3}, {"const": {"k": true}}]})", R"([1, "x"])"},
        {R"({"type": "string", "pattern": "^(ab|c[d-f]+)\d{2,3}$"})", R"("cde12")"},
        {R"({"$defs": {"n": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}}}, "$ref": "#/$defs/n"})", R"({"next": {"next": null}})"},
        {R"({"type": "string", "format": "date-time"})", R"("2026-12-03T10:00:00Z")"},
    };
    int n = 0;
    for (const auto& [g, text] : gbnf) n += write_text(dir / ("gbnf" + std::to_string(n)), std::string("g") + g + std::string(1, '\0') + text);
    for (const auto& [s, text] : schemas) n += write_text(dir / ("schema" + std::to_string(n)), std::string("s") + s + std::string(1, '\0') + text);
    return n == 9;
}

// A measured-looking profile, a spec and a calibration, each small and valid.
bool plan_seeds(const std::filesystem::path& dir) {
    const char* files[] = {
        R"({"name": "laptop", "cores": 8, "read_gbps": 70, "peak_gflops": {"f32": 845, "bf16": 1690, "int8": 3380}, "kernels": "avx512"})",
        R"({"cores": 2, "read_gbps": 20, "peak_gflops": {"f32": 100}})",
        R"({"version": 2, "cpu": "x", "logical_cores": 2, "kernels": "avx2", "libraries": "y", "batches": [16, 32, 64, 128, 512],
            "tables": [{"n_threads": 2, "types": [{"type": "Q4_K", "best": ["native", "native", "openblas", "onednn", "onednn-bf16"],
            "gflops": [1, 2, 3, 4, 5], "candidates": [3, 3, 3, 3, 3]}]}]})",
    };
    int n = 0;
    for (const char* f : files) n += write_text(dir / ("plan" + std::to_string(n)), f);
    return n == 3;
}

// Replies as models write them: reasoning, content and calls in each syntax (the first byte picks the
// syntax and options, as reply_fuzz reads it: 0x18 + syntax index = tools and reasoning on; 0x78 is
// Nemotron's, starting in its reasoning).
bool reply_seeds(const std::filesystem::path& dir) {
    const std::pair<char, const char*> replies[] = {
        {char(0x18), "<think>check</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"},
        {char(0x39), "thinking\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
                     "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"},
        {char(0x1a), "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"x\": [1]}}"},
        {char(0x1b), "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}, \"id\": \"abcdefghi\"}]"},
        {char(0x1c), "<|tool_call|>[{\"name\": \"f\", \"arguments\": {\"s\": \"x\"}}]"},
        {char(0x1d), "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}}]}"},
        {char(0x1e), "<|channel>thought\nplan<channel|>Sure.<|tool_call>call:f{a:<|\"|>x<|\"|>,b:[1,{c:true}],d:-2.5e3}<tool_call|>"
                     "<|tool_call>call:g{}<tool_call|>"},
        {char(0x1f), "<think>plan</think>Sure.<|tool_call_start|>[f(a=\"x\", b=[1, 'y'], c=True, d=None), g()]<|tool_call_end|>Done."},
        {char(0x78), "plan\n</think>\n\nOK.\n<TOOLCALL>[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]</TOOLCALL>"},
        {char(0x39), "thinking\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"},
    };
    int n = 0;
    for (const auto& [pick, text] : replies) n += write_text(dir / ("reply" + std::to_string(n)), std::string(1, pick) + text);
    return n == 10;
}

// KL-divergence base files: llama.cpp's layout with a 5-token vocabulary, whole and cut short.
bool kld_seeds(const std::filesystem::path& dir) {
    std::vector<uint8_t> bytes = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
    const auto put32 = [&](int32_t v) { for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(uint32_t(v) >> (8 * i))); };
    put32(4);  // n_ctx
    put32(5);  // n_vocab
    put32(1);  // n_chunk
    for (const int32_t t : {1, 2, 3, 4}) put32(t);
    for (int record = 0; record < 1; ++record) {  // one scored position: scale, minimum, 5 levels, padding
        const float scale = 16.0f / 65535.0f, min_log_prob = -17.5f;
        uint32_t bits;
        std::memcpy(&bits, &scale, 4);
        put32(int32_t(bits));
        std::memcpy(&bits, &min_log_prob, 4);
        put32(int32_t(bits));
        for (const uint16_t q : {uint16_t(65535), uint16_t(100), uint16_t(0), uint16_t(40000), uint16_t(7), uint16_t(0)}) {
            bytes.push_back(uint8_t(q));
            bytes.push_back(uint8_t(q >> 8));
        }
    }
    return write(dir / "whole.kld", bytes.data(), bytes.size()) && write(dir / "cut.kld", bytes.data(), bytes.size() - 5);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: fuzz_seeds OUT_DIR SHARED_DIR\n");
        return 2;
    }
    const std::filesystem::path out = argv[1], shared = argv[2];
    for (const char* harness : {"gguf", "jinja", "request", "grammar", "plan", "reply", "kld"}) std::filesystem::create_directories(out / harness);
    if (!gguf_seeds(out / "gguf") || !jinja_seeds(out / "jinja", shared / "chat-templates/cases.json") || !builtin_seeds(out / "jinja") ||
        !request_seeds(out / "request") || !grammar_seeds(out / "grammar") || !plan_seeds(out / "plan") || !reply_seeds(out / "reply") ||
        !kld_seeds(out / "kld")) {
        std::fprintf(stderr, "fuzz_seeds: could not write the seeds into %s\n", argv[1]);
        return 1;
    }
    return 0;
}
