// The AMX bfloat16 GEMM (see gemm_amx.h). Code generation for the tile instructions is switched on
// for this file's functions only; nothing here runs unless amx_bf16_available() said yes.
#include "simd/gemm_amx.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#include <immintrin.h>

#include "quant/block_layouts.h"
#include "quant/interleave.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c,avx512f,avx512bw,amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c,avx512f,avx512bw,amx-tile,amx-bf16")
#endif

namespace rill::simd {

namespace {

constexpr size_t kTileElements = 16 * kAmxCols;  // one 1 KiB tile of bfloat16
// Column tiles per pass (2,048 columns): the sums wait in memory between passes only for wider
// weights. In-process alternation on a Xeon (family 6 model 207, 1 thread, 512 tokens, 512 x 2048 and
// 176 x 5632 panels): 64 tiles 536 and 462 GFLOP/s, 16 tiles 522 and 436, 4 tiles 452 and 406.
constexpr size_t kKSteps = 64;

// The tile register layout ldtilecfg reads (palette 1): 64 bytes, rows and bytes per row per tile.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t bytes_per_row[16] = {};
    uint8_t rows[16] = {};
};

bool cpu_has_amx_bf16() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return ((d >> 22) & 1) != 0 && ((d >> 24) & 1) != 0;  // CPUID leaf 7 EDX: AMX-BF16, AMX-TILE
}

bool amx_allowed() {
    const char* v = std::getenv("RILL_AMX");
    return v == nullptr || std::strcmp(v, "0") != 0;
}

// Linux keeps the 8 KiB tile state off until a process asks for it (ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); without it the first tile instruction faults.
bool os_grants_tiles() {
#if defined(__linux__)
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
    return false;
#endif
}

// Where row r's 32 columns of column tile 0 sit in a packed panel; tile k follows kTileElements on.
uint16_t* tile_row(uint16_t* panel, int r, size_t n_k) {
    return panel + size_t(r / 16) * n_k * kTileElements + size_t(r % 16) * kAmxCols;
}

// Zeroes rows [from, up to the next whole block of 32) of a packed panel: the rows a short panel pads.
void zero_padding(uint16_t* panel, int from, size_t n_k) {
    for (int r = from; r < (from + kAmxRows - 1) / kAmxRows * kAmxRows; ++r)
        for (size_t k = 0; k < n_k; ++k) std::memset(tile_row(panel, r, n_k) + k * kTileElements, 0, kAmxCols * sizeof(uint16_t));
}

// Tiles 0-3 accumulate a 32-row by 32-token block in float32, 4-5 hold two 16-row slices of the
// weights, 6-7 two 16-token slices of the packed batch: every tile 16 rows of 64 bytes.
void configure_tiles() {
    TileConfig cfg;
    for (int i = 0; i < 8; ++i) {
        cfg.bytes_per_row[i] = 64;
        cfg.rows[i] = 16;
    }
    _tile_loadconfig(&cfg);
}

}  // namespace

bool amx_bf16_available() {
    static const bool available = amx_allowed() && cpu_has_amx_bf16() && os_grants_tiles();
    return available;
}

int amx_act_blocks(int n_tokens) { return (n_tokens + 31) / 32 * 2; }

size_t amx_packed_act_elements(int n_tokens, size_t cols) {
    return size_t(amx_act_blocks(n_tokens)) * (cols / kAmxCols) * kTileElements;
}

void amx_pack_act(const uint16_t* act, int n_tokens, int block, size_t cols, uint16_t* out) {
    // Tile (block, k) row p holds, for each token n of the block, columns 32k + 2p and 32k + 2p + 1
    // side by side: the pairs the bfloat16 tile product sums first.
    const size_t n_k = cols / kAmxCols;
    uint32_t* dst = reinterpret_cast<uint32_t*>(out + size_t(block) * n_k * kTileElements);
    for (int n = 0; n < 16; ++n) {
        const int t = block * 16 + n;
        if (t >= n_tokens) {
            for (size_t k = 0; k < n_k; ++k)
                for (int p = 0; p < 16; ++p) dst[k * 256 + size_t(p) * 16 + size_t(n)] = 0;
            continue;
        }
        const uint16_t* row = act + size_t(t) * cols;
        for (size_t k = 0; k < n_k; ++k) {
            uint32_t pairs[16];
            std::memcpy(pairs, row + k * kAmxCols, sizeof pairs);
            for (int p = 0; p < 16; ++p) dst[k * 256 + size_t(p) * 16 + size_t(n)] = pairs[p];
        }
    }
}

size_t amx_packed_weight_elements(int n_rows, size_t cols) {
    return size_t((n_rows + kAmxRows - 1) / kAmxRows * 2) * (cols / kAmxCols) * kTileElements;
}

void amx_pack_weights(const uint16_t* w, size_t ldw, int n_rows, size_t cols, uint16_t* out) {
    const size_t n_k = cols / kAmxCols;
    for (int r = 0; r < n_rows; ++r) {
        uint16_t* dst = tile_row(out, r, n_k);
        const uint16_t* row = w + size_t(r) * ldw;
        for (size_t k = 0; k < n_k; ++k) std::memcpy(dst + k * kTileElements, row + k * kAmxCols, kAmxCols * sizeof(uint16_t));
    }
    zero_padding(out, n_rows, n_k);
}

size_t amx_acc_elements(int n_rows, int n_tokens) {
    return size_t((n_rows + kAmxRows - 1) / kAmxRows * 2) * size_t(amx_act_blocks(n_tokens)) * 256;
}

namespace {

// f32_to_bf16 on sixteen lanes: add 0x7fff plus the lowest kept bit and keep the top half; a NaN keeps
// its top half with the quiet bit set (the avx2 form in convert.cpp, widened).
__m256i round_bf16(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i kept = _mm512_mask_or_epi32(rounded, nan, x, _mm512_set1_epi32(0x400000));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(kept, 16));
}

}  // namespace

void amx_pack_weights_f32(const float* rows, int first, int n_rows, int panel_rows, size_t cols, uint16_t* out) {
    const size_t n_k = cols / kAmxCols;
    for (int r = first; r < first + n_rows; ++r) {
        uint16_t* dst = tile_row(out, r, n_k);
        const float* row = rows + size_t(r - first) * cols;
        for (size_t k = 0; k < n_k; ++k) {
            const __m256i lo = round_bf16(_mm512_loadu_ps(row + k * kAmxCols));
            const __m256i hi = round_bf16(_mm512_loadu_ps(row + k * kAmxCols + 16));
            _mm512_storeu_si512(dst + k * kTileElements, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
        }
    }
    if (first + n_rows == panel_rows) zero_padding(out, panel_rows, n_k);
}

bool amx_packs_groups(TensorType type) { return type == TensorType::Q4_0 || type == TensorType::Q8_0; }

void amx_pack_group(TensorType type, const uint8_t* group, int first, int panel_rows, size_t cols, uint16_t* out) {
    const bool q4 = type == TensorType::Q4_0;
    const size_t block = q4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0), payload = block - 2, n_k = cols / kAmxCols;
    const __m128i low = _mm_set1_epi8(15);
    const __m512i eight = _mm512_set1_epi32(8);
    for (int i = 0; i < kInterleave; ++i) {
        int lane = 0;  // where row i's scale sits among the group's eight
        while (kInterleaveLanes[lane] != i) ++lane;
        const int r = first + i;
        uint16_t* dst = tile_row(out, r, n_k);
        for (size_t b = 0; b < n_k; ++b) {
            const uint8_t* blk = group + b * kInterleave * block;
            uint16_t h;
            std::memcpy(&h, blk + 2 * lane, 2);
            const __m512 d = _mm512_set1_ps(_cvtsh_ss(h));
            const uint8_t* q = blk + 2 * kInterleave + size_t(i) * payload;
            __m512i lo, hi;  // columns 0-15 and 16-31 as integers: Q4_0's low then high nibbles less 8
            if (q4) {
                const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
                lo = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(bytes, low)), eight);
                hi = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(bytes, 4), low)), eight);
            } else {
                lo = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
                hi = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
            }
            const __m256i a = round_bf16(_mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
            const __m256i c = round_bf16(_mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
            _mm512_storeu_si512(dst + b * kTileElements, _mm512_inserti64x4(_mm512_castsi256_si512(a), c, 1));
        }
    }
    if (first + kInterleave == panel_rows) zero_padding(out, panel_rows, n_k);
}

void amx_gemm_bf16(const uint16_t* panel, int n_rows, const uint16_t* packed, int n_tokens, size_t cols, float* acc, float* out,
                   size_t ldo) {
    const size_t n_k = cols / kAmxCols, slice_elements = n_k * kTileElements;
    const int n_slices = (n_rows + kAmxRows - 1) / kAmxRows * 2, n_blocks = amx_act_blocks(n_tokens);
    // The sums are 16 x 16 float32 tiles in acc, tile (slice, block) at (slice * n_blocks + block) * 256.
    auto tile = [&](int slice, int block) { return acc + (size_t(slice) * size_t(n_blocks) + size_t(block)) * 256; };
    configure_tiles();
    // The sums wait in acc between passes over the columns, stored and reloaded exactly, so each is
    // still one float32 sum over the columns in order, whatever the panel's width.
    for (size_t k0 = 0; k0 < n_k; k0 += kKSteps) {
        const size_t k1 = std::min(n_k, k0 + kKSteps);
        for (int s = 0; s < n_slices; s += 2) {
            const uint16_t* w0 = panel + size_t(s) * slice_elements;
            const uint16_t* w1 = w0 + slice_elements;
            for (int b = 0; b < n_blocks; b += 2) {
                const uint16_t* b0 = packed + size_t(b) * slice_elements;
                const uint16_t* b1 = b0 + slice_elements;
                if (k0 == 0) {
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                } else {
                    _tile_loadd(0, tile(s, b), 64);
                    _tile_loadd(1, tile(s, b + 1), 64);
                    _tile_loadd(2, tile(s + 1, b), 64);
                    _tile_loadd(3, tile(s + 1, b + 1), 64);
                }
                for (size_t k = k0; k < k1; ++k) {
                    _tile_loadd(4, w0 + k * kTileElements, 64);
                    _tile_loadd(5, w1 + k * kTileElements, 64);
                    _tile_loadd(6, b0 + k * kTileElements, 64);
                    _tile_loadd(7, b1 + k * kTileElements, 64);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
                _tile_stored(0, tile(s, b), 64);
                _tile_stored(1, tile(s, b + 1), 64);
                _tile_stored(2, tile(s + 1, b), 64);
                _tile_stored(3, tile(s + 1, b + 1), 64);
            }
        }
    }
    _tile_release();
    // Tile element [m * 16 + n] is row 16 * slice + m against token 16 * block + n.
    for (int s = 0; s < n_slices; ++s) {
        const int rows = std::min(16, n_rows - s * 16);
        for (int b = 0; b < n_blocks && rows > 0; ++b) {
            const float* c = tile(s, b);
            const int toks = std::min(16, n_tokens - b * 16);
            for (int n = 0; n < toks; ++n) {
                float* dst = out + size_t(b * 16 + n) * ldo + size_t(s * 16);
                for (int m = 0; m < rows; ++m) dst[m] = c[m * 16 + n];
            }
        }
    }
}

}  // namespace rill::simd

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // no AMX off x86-64: the backend reports itself unavailable and is never called

namespace rill::simd {
bool amx_bf16_available() { return false; }
int amx_act_blocks(int n_tokens) { return (n_tokens + 31) / 32 * 2; }
size_t amx_packed_act_elements(int, size_t) { return 0; }
void amx_pack_act(const uint16_t*, int, int, size_t, uint16_t*) {}
size_t amx_packed_weight_elements(int, size_t) { return 0; }
void amx_pack_weights(const uint16_t*, size_t, int, size_t, uint16_t*) {}
size_t amx_acc_elements(int, int) { return 0; }
void amx_pack_weights_f32(const float*, int, int, int, size_t, uint16_t*) {}
bool amx_packs_groups(TensorType) { return false; }
void amx_pack_group(TensorType, const uint8_t*, int, int, size_t, uint16_t*) {}
void amx_gemm_bf16(const uint16_t*, int, const uint16_t*, int, size_t, float*, float*, size_t) {}
}  // namespace rill::simd

#endif
