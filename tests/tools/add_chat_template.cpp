// Copies a GGUF model and sets tokenizer.chat_template, so a model without one can test chat:
//   add_chat_template IN.gguf TEMPLATE.jinja OUT.gguf
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../gguf_builder.h"
#include "runtime/format/gguf.h"

using namespace rill;

namespace {

// Encodes a parsed value back into GGUF's layout.
void encode(const GgufValue& v, std::vector<uint8_t>& out) {
    using B = test::GgufBuilder;
    switch (v.type) {
        case GgufType::U8: B::put<uint8_t>(out, uint8_t(v.u)); break;
        case GgufType::I8: B::put<int8_t>(out, int8_t(v.i)); break;
        case GgufType::U16: B::put<uint16_t>(out, uint16_t(v.u)); break;
        case GgufType::I16: B::put<int16_t>(out, int16_t(v.i)); break;
        case GgufType::U32: B::put<uint32_t>(out, uint32_t(v.u)); break;
        case GgufType::I32: B::put<int32_t>(out, int32_t(v.i)); break;
        case GgufType::U64: B::put<uint64_t>(out, v.u); break;
        case GgufType::I64: B::put<int64_t>(out, v.i); break;
        case GgufType::F32: B::put<float>(out, float(v.f)); break;
        case GgufType::F64: B::put<double>(out, v.f); break;
        case GgufType::BOOL: B::put<uint8_t>(out, uint8_t(v.u)); break;
        case GgufType::STRING: B::put_string(out, v.str); break;
        case GgufType::ARRAY: {
            B::put<uint32_t>(out, uint32_t(v.element_type));
            B::put<uint64_t>(out, v.count);
            if (v.element_type == GgufType::STRING) {
                for (const std::string& s : v.strings) B::put_string(out, s);
            } else if (v.element_type == GgufType::ARRAY) {
                for (const GgufValue& item : v.items) encode(item, out);
            } else {
                const size_t size = v.element_type == GgufType::U8 || v.element_type == GgufType::I8 || v.element_type == GgufType::BOOL ? 1
                                    : v.element_type == GgufType::U16 || v.element_type == GgufType::I16                              ? 2
                                    : v.element_type == GgufType::U64 || v.element_type == GgufType::I64 || v.element_type == GgufType::F64 ? 8
                                                                                                                                   : 4;
                out.insert(out.end(), v.raw, v.raw + v.count * size);
            }
            break;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: add_chat_template IN.gguf TEMPLATE.jinja OUT.gguf\n");
        return 2;
    }
    const GgufFile in = GgufFile::open(argv[1]);
    std::ifstream t(argv[2], std::ios::binary);
    std::ostringstream source;
    source << t.rdbuf();
    test::GgufBuilder out;
    for (const auto& [key, value] : in.metadata()) {
        if (key == "tokenizer.chat_template" || key == "general.alignment") continue;
        std::vector<uint8_t> bytes;
        encode(value, bytes);
        out.kv_encoded(key, uint32_t(value.type), bytes);
    }
    out.kv_string("tokenizer.chat_template", source.str());
    for (const GgufTensor& tensor : in.tensors())
        out.tensor(tensor.name, std::vector<uint64_t>(tensor.ne.begin(), tensor.ne.begin() + tensor.n_dims), uint32_t(tensor.type),
                   std::vector<uint8_t>(tensor.data, tensor.data + tensor.n_bytes));
    const std::vector<uint8_t> bytes = out.bytes();
    FILE* f = std::fopen(argv[3], "wb");
    if (f == nullptr) return 1;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok ? 0 : 1;
}
