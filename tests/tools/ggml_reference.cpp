// What llama.cpp's own code makes of the IQ1–IQ3 and ternary types, for rill's tables and tests: the
// lattice tables those formats index, expected dequantized and quantized bytes, whole models quantized
// by llama.cpp's quantizer (with an importance matrix read by llama.cpp's own loader). Built by
// scripts/ggml_reference.sh against the libraries and headers of the llama.cpp peer; nothing of ggml or
// llama.cpp is linked into rill.
//   ggml_reference grids                             C++ for quant/iq_grids.inc on stdout
//   ggml_reference dequant OUT_DIR                   OUT_DIR/<type>.blocks and <type>.f32 for each type
//   ggml_reference quantize OUT_DIR                  OUT_DIR/quantize.f32 (input rows) and <type>.quantized
//   ggml_reference quantize-model IN OUT FTYPE [IMATRIX] [--pure]
//                                                    llama_model_quantize (FTYPE: llama_ftype's number)
//   ggml_reference imatrix-read FILE                 what llama.cpp's loader reads: one JSON line per entry
//   ggml_reference imatrix-collect MODEL TEXT N_CTX  llama.cpp's forward pass collecting an imatrix
//   ggml_reference tensor-hashes FILE                {name: FNV-1a 64 of its bytes} as ggml's GGUF reader reads them
#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"
#include "imatrix-loader.h"
#include "llama.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

ggml_type type_named(const std::string& name) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char* n = ggml_type_name(ggml_type(t));
        if (n && name == n) return ggml_type(t);
    }
    std::fprintf(stderr, "ggml_reference: ggml has no type %s\n", name.c_str());
    std::exit(1);
}

constexpr int kBlock = 256;

void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Dequantizes the crafted blocks and returns the values.
std::vector<float> run(const char* type, const std::vector<uint8_t>& blocks, size_t n_blocks) {
    std::vector<float> out(n_blocks * kBlock);
    ggml_get_type_traits(type_named(type))->to_float(blocks.data(), out.data(), int64_t(out.size()));
    return out;
}

// Packs a grid entry's levels, element 0 in the low bits, `bits` per element.
uint16_t pack(const std::vector<int>& levels, int bits) {
    uint16_t packed = 0;
    for (size_t j = 0; j < levels.size(); ++j) packed |= uint16_t(levels[j] << (bits * j));
    return packed;
}

int level_of(float value, const std::vector<float>& alphabet, const char* grid) {
    for (size_t l = 0; l < alphabet.size(); ++l)
        if (value == alphabet[l]) return int(l);
    std::fprintf(stderr, "ggml_reference: %s has a value %g outside its alphabet\n", grid, double(value));
    std::exit(1);
}

// Each crafted block makes the dequantizer's multiplier exactly 1 with zero signs, so its outputs are the
// grid's bytes themselves (plus IQ1's +1/8 shift).
struct GridSpec {
    const char* name;         // of the table in rill
    const char* type;         // ggml's dequantizer
    int entries;              // in the grid
    int width;                // elements per entry
    int bits;                 // per packed level
    std::vector<float> alphabet;
    size_t block_bytes;
    int per_block;            // entries one block reads
    void (*craft)(uint8_t* block, int first);  // a block reading entries first .. first + per_block
};

void craft_iq2_xxs(uint8_t* b, int first) {
    put16(b, 0x4800);  // d = 8: 8 * (0.5 + 0) * 0.25 = 1
    for (int ib = 0; ib < 8; ++ib)
        for (int l = 0; l < 4; ++l) b[2 + 8 * ib + l] = uint8_t(first + 4 * ib + l);
}
void craft_iq2_xs(uint8_t* b, int first) {
    put16(b, 0x4800);
    for (int i = 0; i < 32; ++i) put16(b + 2 + 2 * i, uint16_t(first + i));  // sign index 0 in bits 9..15
}
void craft_iq2_s(uint8_t* b, int first) {
    put16(b, 0x4800);
    for (int ib = 0; ib < 8; ++ib)
        for (int l = 0; l < 4; ++l) {
            const int idx = first + 4 * ib + l;
            b[2 + 4 * ib + l] = uint8_t(idx & 255);
            b[66 + ib] |= uint8_t((idx >> 8) << (2 * l));
        }
}
void craft_iq3_xxs(uint8_t* b, int first) {
    put16(b, 0x4400);  // d = 4: 4 * (0.5 + 0) * 0.5 = 1
    for (int i = 0; i < 64; ++i) b[2 + i] = uint8_t(first + i);
}
void craft_iq3_s(uint8_t* b, int first) {
    put16(b, 0x3C00);  // d = 1: 1 * (1 + 2 * 0) = 1
    for (int ib = 0; ib < 8; ++ib)
        for (int k = 0; k < 8; ++k) {
            const int idx = first + 8 * ib + k;
            b[2 + 8 * ib + k] = uint8_t(idx & 255);
            b[66 + ib] |= uint8_t((idx >> 8) << k);
        }
}
void craft_iq1_s(uint8_t* b, int first) {
    put16(b, 0x3C00);  // d = 1, scale 0: dl = 1; values are grid + 1/8
    for (int ib = 0; ib < 8; ++ib) {
        uint16_t qh = 0;
        for (int l = 0; l < 4; ++l) {
            const int idx = first + 4 * ib + l;
            b[2 + 4 * ib + l] = uint8_t(idx & 255);
            qh |= uint16_t((idx >> 8) << (3 * l));
        }
        put16(b + 34 + 2 * ib, qh);
    }
}

int print_grids() {
    const std::vector<GridSpec> specs = {
        {"kIQ2XXSLevels", "iq2_xxs", 256, 8, 2, {8, 25, 43}, 66, 32, craft_iq2_xxs},
        {"kIQ2XSLevels", "iq2_xs", 512, 8, 2, {8, 25, 43}, 74, 32, craft_iq2_xs},
        {"kIQ2SLevels", "iq2_s", 1024, 8, 2, {8, 25, 43}, 82, 32, craft_iq2_s},
        {"kIQ3XXSLevels", "iq3_xxs", 256, 4, 3, {4, 12, 20, 28, 36, 44, 52, 62}, 98, 64, craft_iq3_xxs},
        {"kIQ3SLevels", "iq3_s", 512, 4, 3, {1, 3, 5, 7, 9, 11, 13, 15}, 110, 64, craft_iq3_s},
        {"kIQ1SLevels", "iq1_s", 2048, 8, 2, {-0.875f, 0.125f, 1.125f}, 50, 32, craft_iq1_s},
    };
    std::printf("// Generated by tests/tools/ggml_reference.cpp (scripts/ggml_reference.sh grids) from ggml's own\n"
                "// dequantizers: the lattice points of ggml's IQ formats, packed as levels (see iq_grids.h).\n");
    for (const GridSpec& s : specs) {
        const size_t n_blocks = size_t(s.entries / s.per_block);
        std::vector<uint8_t> blocks(n_blocks * s.block_bytes, 0);
        for (size_t i = 0; i < n_blocks; ++i) s.craft(blocks.data() + i * s.block_bytes, int(i) * s.per_block);
        const std::vector<float> values = run(s.type, blocks, n_blocks);
        std::printf("inline constexpr uint16_t %s[%d] = {", s.name, s.entries);
        for (int e = 0; e < s.entries; ++e) {
            std::vector<int> levels(size_t(s.width));
            for (int j = 0; j < s.width; ++j) levels[size_t(j)] = level_of(values[size_t(e * s.width + j)], s.alphabet, s.name);
            std::printf("%s0x%04x,", e % 12 == 0 ? "\n    " : " ", pack(levels, s.bits));
        }
        std::printf("\n};\n");
    }
    return 0;
}

// A fixed-seed generator so that the expectations can be remade identically.
struct SplitMix {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

// A finite half of either sign between 2^-10 and 2^-2, as real block scales are.
uint16_t random_scale(SplitMix& rng) {
    const uint64_t r = rng.next();
    const uint16_t sign = (r & 1) ? 0x8000 : 0;
    const uint16_t exponent = uint16_t(15 - 10 + (r >> 1) % 9);
    return uint16_t(sign | (exponent << 10) | ((r >> 8) & 0x3ff));
}

struct DequantSpec {
    const char* type;
    size_t block_bytes;
    int scale_at;  // byte offset of the half scale, or -1 for IQ1_M's scale spread over four nibbles
};

int write_dequant(const std::string& dir) {
    const std::vector<DequantSpec> specs = {
        {"iq2_xxs", 66, 0}, {"iq2_xs", 74, 0}, {"iq2_s", 82, 0},  {"iq3_xxs", 98, 0}, {"iq3_s", 110, 0},
        {"iq1_s", 50, 0},   {"iq1_m", 56, -1}, {"tq1_0", 54, 52}, {"tq2_0", 66, 64},
    };
    constexpr size_t kBlocks = 8;
    for (const DequantSpec& s : specs) {
        SplitMix rng{0x5EEDull + s.block_bytes};
        std::vector<uint8_t> blocks(kBlocks * s.block_bytes);
        for (auto& byte : blocks) byte = uint8_t(rng.next());
        for (size_t i = 0; i < kBlocks; ++i) {
            uint8_t* b = blocks.data() + i * s.block_bytes;
            const uint16_t d = random_scale(rng);
            if (s.scale_at >= 0) {
                put16(b + s.scale_at, d);
            } else {  // IQ1_M: nibble k of the half is the top nibble of the k-th 16-bit scale word
                for (int k = 0; k < 4; ++k) {
                    uint16_t word;
                    std::memcpy(&word, b + 48 + 2 * k, 2);
                    put16(b + 48 + 2 * k, uint16_t((word & 0x0fff) | (((d >> (4 * k)) & 0xf) << 12)));
                }
            }
        }
        const std::vector<float> values = run(s.type, blocks, kBlocks);
        for (float v : values)
            if (!std::isfinite(v)) {
                std::fprintf(stderr, "ggml_reference: %s gave a non-finite value\n", s.type);
                return 1;
            }
        const std::string stem = dir + "/" + s.type;
        FILE* fb = std::fopen((stem + ".blocks").c_str(), "wb");
        FILE* ff = std::fopen((stem + ".f32").c_str(), "wb");
        if (!fb || !ff) {
            std::fprintf(stderr, "ggml_reference: cannot write %s.*\n", stem.c_str());
            return 1;
        }
        std::fwrite(blocks.data(), 1, blocks.size(), fb);
        std::fwrite(values.data(), sizeof(float), values.size(), ff);
        std::fclose(fb);
        std::fclose(ff);
    }
    return 0;
}

// Rows of normal values (Box-Muller on the fixed-seed generator), then one row with exact ties: every
// value a multiple of a quarter of the block's largest, so rounding halves is exercised.
std::vector<float> quantize_input(size_t rows, size_t cols) {
    SplitMix rng{0xC0FFEEull};
    std::vector<float> x(rows * cols);
    for (size_t i = 0; i + 1 < (rows - 1) * cols; i += 2) {
        const double u1 = (double(rng.next() >> 11) + 1.0) * 0x1p-53, u2 = double(rng.next() >> 11) * 0x1p-53;
        const double r = std::sqrt(-2.0 * std::log(u1));
        x[i] = float(r * std::cos(6.283185307179586 * u2));
        x[i + 1] = float(r * std::sin(6.283185307179586 * u2));
    }
    for (size_t j = 0; j < cols; ++j) x[(rows - 1) * cols + j] = float(int(rng.next() % 9) - 4) * 0.25f;
    return x;
}

int write_quantized(const std::string& dir) {
    constexpr size_t kRows = 4, kCols = 512;
    const std::vector<float> x = quantize_input(kRows, kCols);
    FILE* fx = std::fopen((dir + "/quantize.f32").c_str(), "wb");
    if (!fx) return 1;
    std::fwrite(x.data(), sizeof(float), x.size(), fx);
    std::fclose(fx);
    // A per-column importance as an imatrix gives it: positive, spread over three decades.
    std::vector<float> importance(kCols);
    SplitMix rng{0xBADC0DEull};
    for (float& v : importance) v = float(std::exp(double(rng.next() >> 11) * 0x1p-53 * 6.9 - 3.45));
    FILE* fi = std::fopen((dir + "/quantize.importance.f32").c_str(), "wb");
    if (!fi) return 1;
    std::fwrite(importance.data(), sizeof(float), importance.size(), fi);
    std::fclose(fi);
    // <type>.quantized with no importance (where ggml accepts none), <type>.imatrix.quantized with it.
    const struct {
        const char* type;
        size_t block_bytes;
        bool needs_imatrix;
    } specs[] = {{"tq1_0", 54, false},  {"tq2_0", 66, false},  {"iq2_xxs", 66, true}, {"iq2_xs", 74, true},
                 {"iq2_s", 82, false},  {"iq3_xxs", 98, false}, {"iq3_s", 110, false}, {"iq1_s", 50, true},
                 {"iq1_m", 56, false}};
    for (const auto& s : specs) {
        const ggml_type type = type_named(s.type);
        ggml_quantize_init(type);
        for (const bool with : {false, true}) {
            if (!with && s.needs_imatrix) continue;
            if (with && type == GGML_TYPE_TQ1_0) continue;  // ternary types ignore it
            if (with && type == GGML_TYPE_TQ2_0) continue;
            std::vector<uint8_t> out(kRows * kCols / kBlock * s.block_bytes);
            const float* weights = with ? importance.data() : nullptr;
            if (ggml_quantize_chunk(type, x.data(), out.data(), 0, kRows, kCols, weights) != out.size()) return 1;
            FILE* f = std::fopen((dir + "/" + s.type + (with ? ".imatrix" : "") + ".quantized").c_str(), "wb");
            if (!f) return 1;
            std::fwrite(out.data(), 1, out.size(), f);
            std::fclose(f);
        }
    }
    // The older types an imatrix also steers (their plain quantizers are tested elsewhere).
    for (const char* name : {"q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs"}) {
        const ggml_type type = type_named(name);
        std::vector<uint8_t> out(ggml_row_size(type, kCols) * kRows);
        if (ggml_quantize_chunk(type, x.data(), out.data(), 0, kRows, kCols, importance.data()) != out.size()) return 1;
        std::string file = name;
        for (char& c : file) c = char(std::tolower(static_cast<unsigned char>(c)));
        FILE* f = std::fopen((dir + "/" + file + ".imatrix.quantized").c_str(), "wb");
        if (!f) return 1;
        std::fwrite(out.data(), 1, out.size(), f);
        std::fclose(f);
    }
    return 0;
}

// Each entry's per-column importance as llama-quantize derives it from either file format: the mean of
// x² over the tokens each matrix (or expert) saw, 1 where it saw none.
std::map<std::string, std::vector<float>> importance_of(const common_imatrix& m) {
    std::map<std::string, std::vector<float>> out;
    for (const auto& [name, entry] : m.entries) {
        std::vector<float>& v = out[name];
        v.resize(entry.sums.size());
        if (m.is_legacy) {
            const int64_t ncall = entry.counts.empty() ? 0 : entry.counts[0];
            for (size_t i = 0; i < v.size(); ++i) v[i] = ncall > 0 ? entry.sums[i] / float(ncall) : entry.sums[i];
        } else {
            const size_t n_mat = entry.counts.size(), cols = v.size() / n_mat;
            for (size_t j = 0; j < n_mat; ++j)
                for (size_t i = 0; i < cols; ++i)
                    v[j * cols + i] = entry.counts[j] > 0 ? entry.sums[j * cols + i] / float(entry.counts[j]) : 1.0f;
        }
    }
    return out;
}

int quantize_model(const char* in, const char* out, int ftype, const char* imatrix_path, bool pure) {
    llama_model_quantize_params params = llama_model_quantize_default_params();
    params.ftype = llama_ftype(ftype);
    params.nthread = 1;
    params.pure = pure;
    std::map<std::string, std::vector<float>> importance;
    std::vector<llama_model_imatrix_data> data;
    if (imatrix_path) {
        common_imatrix m;
        if (!common_imatrix_load(imatrix_path, m)) {
            std::fprintf(stderr, "ggml_reference: llama.cpp cannot read the imatrix %s\n", imatrix_path);
            return 1;
        }
        importance = importance_of(m);
        for (const auto& [name, v] : importance) data.push_back({name.c_str(), v.data(), v.size()});
        data.push_back({nullptr, nullptr, 0});
        params.imatrix = data.data();
    }
    return llama_model_quantize(in, out, &params) == 0 ? 0 : 1;
}

// One JSON line per entry: name, counts, and the importance llama-quantize would use.
int read_imatrix(const char* path) {
    common_imatrix m;
    if (!common_imatrix_load(path, m)) {
        std::fprintf(stderr, "ggml_reference: llama.cpp cannot read the imatrix %s\n", path);
        return 1;
    }
    std::printf("{\"legacy\":%s,\"chunk_count\":%d,\"chunk_size\":%d,\"datasets\":%zu}\n", m.is_legacy ? "true" : "false", m.chunk_count,
                m.chunk_size, m.datasets.size());
    const auto importance = importance_of(m);
    for (const auto& [name, entry] : m.entries) {
        std::printf("{\"name\":\"%s\",\"counts\":[", name.c_str());
        for (size_t i = 0; i < entry.counts.size(); ++i) std::printf("%s%lld", i ? "," : "", (long long)entry.counts[i]);
        std::printf("],\"importance\":[");
        const std::vector<float>& v = importance.at(name);
        for (size_t i = 0; i < v.size(); ++i) std::printf("%s%.9g", i ? "," : "", double(v[i]));
        std::printf("]}\n");
    }
    return 0;
}

// llama-imatrix's collection, by llama.cpp's own forward pass: the eval callback sums the squares of
// each "blk." weight's float inputs over products of at least 16 tokens, every chunk of n_ctx tokens
// evaluated alone with its first token replaced by BOS; experts always. Prints what imatrix-read does.
struct Collected {
    std::map<std::string, std::vector<double>> sums;     // n_mat × columns
    std::map<std::string, std::vector<int64_t>> counts;  // per matrix (expert)
};

// A mixture's experts (MUL_MAT_ID, always collected): each token's input row goes to the expert that
// slot chose, and counts one token for it.
void collect_experts(Collected& c, const ggml_tensor* t) {
    const ggml_tensor* w = t->src[0];
    const ggml_tensor* x = t->src[1];
    const ggml_tensor* ids = t->src[2];
    const int64_t n_as = w->ne[2], cols = x->ne[0];
    std::vector<double>& sums = c.sums[w->name];
    std::vector<int64_t>& counts = c.counts[w->name];
    sums.resize(size_t(n_as * cols));
    counts.resize(size_t(n_as));
    for (int64_t slot = 0; slot < ids->ne[0]; ++slot)
        for (int64_t token = 0; token < ids->ne[1]; ++token) {
            const int32_t ex = *reinterpret_cast<const int32_t*>(static_cast<const char*>(ids->data) + token * ids->nb[1] + slot * ids->nb[0]);
            const auto* row = reinterpret_cast<const float*>(static_cast<const char*>(x->data) + (slot % x->ne[1]) * x->nb[1] + token * x->nb[2]);
            for (int64_t j = 0; j < cols; ++j) sums[size_t(ex * cols + j)] += double(row[j]) * double(row[j]);
            ++counts[size_t(ex)];
        }
}

bool collect_inputs(ggml_tensor* t, bool ask, void* user) {
    auto& c = *static_cast<Collected*>(user);
    if (t->op == GGML_OP_MUL_MAT_ID) {
        if (!ask) collect_experts(c, t);
        return true;
    }
    if (t->op != GGML_OP_MUL_MAT) return false;
    const ggml_tensor* w = t->src[0];
    const ggml_tensor* x = t->src[1];
    const std::string name = w->name;
    if (ask) return x->ne[1] >= 16 && x->type == GGML_TYPE_F32 && name.rfind("blk.", 0) == 0;
    std::vector<double>& sums = c.sums[name];
    sums.resize(size_t(x->ne[0]));
    int64_t rows = 0;
    for (int64_t i3 = 0; i3 < x->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < x->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < x->ne[1]; ++i1, ++rows) {
                const auto* row = reinterpret_cast<const float*>(static_cast<const char*>(x->data) + i1 * x->nb[1] + i2 * x->nb[2] + i3 * x->nb[3]);
                for (int64_t j = 0; j < x->ne[0]; ++j) sums[size_t(j)] += double(row[j]) * double(row[j]);
            }
    c.counts[name].resize(1);
    c.counts[name][0] += rows;
    return true;
}

int collect_imatrix(const char* model_path, const char* text_path, int n_ctx) {
    llama_backend_init();
    // The peer ships its CPU backends as loadable variants beside libggml (the script says where).
    if (const char* dir = std::getenv("GGML_BACKEND_DIR")) ggml_backend_load_all_from_path(dir);
    llama_model_params mp = llama_model_default_params();
    llama_model* model = llama_model_load_from_file(model_path, mp);
    if (!model) return 1;
    Collected collected;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = uint32_t(n_ctx);
    cp.n_threads = cp.n_threads_batch = 2;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;  // float32 softmax and sums, as rill's attention
    cp.cb_eval = collect_inputs;
    cp.cb_eval_user_data = &collected;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    const llama_vocab* vocab = llama_model_get_vocab(model);
    std::string text;
    if (FILE* f = std::fopen(text_path, "rb")) {
        char buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
        std::fclose(f);
    }
    if (!text.empty() && text.back() == '\n') text.pop_back();
    std::vector<llama_token> tokens(text.size() + 2);
    const int n = llama_tokenize(vocab, text.data(), int32_t(text.size()), tokens.data(), int32_t(tokens.size()), true, false);
    if (n < 2 * n_ctx) return 1;
    llama_batch batch = llama_batch_init(n_ctx, 0, 1);
    for (int c = 0; c + 1 <= n / n_ctx; ++c) {
        llama_memory_clear(llama_get_memory(ctx), true);
        batch.n_tokens = n_ctx;
        for (int i = 0; i < n_ctx; ++i) {
            batch.token[i] = i == 0 ? llama_vocab_bos(vocab) : tokens[size_t(c * n_ctx + i)];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        if (llama_decode(ctx, batch) != 0) return 1;
    }
    std::printf("{\"chunk_count\":%d,\"chunk_size\":%d}\n", n / n_ctx, n_ctx);
    for (const auto& [name, sums] : collected.sums) {
        const std::vector<int64_t>& counts = collected.counts.at(name);
        const size_t cols = sums.size() / counts.size();
        std::printf("{\"name\":\"%s\",\"counts\":[", name.c_str());
        for (size_t e = 0; e < counts.size(); ++e) std::printf("%s%lld", e ? "," : "", (long long)counts[e]);
        std::printf("],\"importance\":[");  // llama-quantize's: the mean, 1 for an expert no token chose
        for (size_t i = 0; i < sums.size(); ++i) {
            const int64_t count = counts[i / cols];
            std::printf("%s%.9g", i ? "," : "", count > 0 ? sums[i] / double(count) : 1.0);
        }
        std::printf("]}\n");
    }
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}

int tensor_hashes(const char* path) {
    ggml_context* ctx = nullptr;
    gguf_init_params params{/*no_alloc=*/false, &ctx};
    gguf_context* g = gguf_init_from_file(path, params);
    if (!g) {
        std::fprintf(stderr, "ggml_reference: ggml cannot read %s\n", path);
        return 1;
    }
    std::printf("{");
    for (int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
        const char* name = gguf_get_tensor_name(g, i);
        const ggml_tensor* t = ggml_get_tensor(ctx, name);
        const auto* p = static_cast<const uint8_t*>(t->data);
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t k = 0; k < ggml_nbytes(t); ++k) h = (h ^ p[k]) * 0x100000001b3ull;
        std::printf("%s\"%s\": \"%016llx\"", i ? ", " : "", name, (unsigned long long)h);
    }
    std::printf("}\n");
    gguf_free(g);
    ggml_free(ctx);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: ggml_reference grids | dequant OUT_DIR | quantize OUT_DIR | quantize-model IN OUT FTYPE [IMATRIX] | imatrix-read FILE\n");
        return 2;
    }
    const std::string command = argv[1];
    if (command == "grids") return print_grids();
    if (command == "dequant" && argc == 3) return write_dequant(argv[2]);
    if (command == "quantize" && argc == 3) return write_quantized(argv[2]);
    if (command == "quantize-model" && argc >= 5) {  // IN OUT FTYPE [IMATRIX] [--pure]
        bool pure = false;
        const char* imatrix = nullptr;
        for (int i = 5; i < argc; ++i) (std::string(argv[i]) == "--pure" ? pure = true : (imatrix = argv[i], false));
        return quantize_model(argv[2], argv[3], std::atoi(argv[4]), imatrix, pure);
    }
    if (command == "imatrix-read" && argc == 3) return read_imatrix(argv[2]);
    if (command == "tensor-hashes" && argc == 3) return tensor_hashes(argv[2]);
    if (command == "imatrix-collect" && argc == 5) return collect_imatrix(argv[2], argv[3], std::atoi(argv[4]));
    std::fprintf(stderr, "ggml_reference: unknown command %s\n", command.c_str());
    return 2;
}
