// Writes small valid GGUF files as the fuzzer's starting corpus.
#include <cstdio>
#include <string>

#include "../gguf_builder.h"

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
        FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
        if (!f) return false;
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        return std::fclose(f) == 0;
    };
    rill::test::GgufBuilder meta;
    meta.kv_u32("general.alignment", 64).kv_f32_array("f", {1, 2}).kv_i32_array("i", {3}).kv_bool("b", true)
        .kv_string_array("s", {"a", "bc"}).tensor("q", {32, 2}, 2, std::vector<uint8_t>(36));
    const bool ok = write("tiny_llama.gguf", rill::test::tiny_llama().bytes()) && write("metadata.gguf", meta.bytes());
    return ok ? 0 : 1;
}
