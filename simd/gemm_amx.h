// A prompt-side GEMM on Intel's AMX tiles in bfloat16 (Sapphire Rapids and later Xeons): weight rows
// are rounded to bfloat16 straight into 1 KiB tiles (from float32 rows, or from interleaved Q4_0/Q8_0
// groups as they lie), the batch is packed once per call into the tiles' pair-interleaved layout, and
// each output is one float32 sum over the columns in order, so it does not depend on the panel, the
// batch size or the thread that computes it. The same accuracy class as oneDNN's bf16 matmul
// (bfloat16 inputs, float32 sums); it exists because oneDNN 2.6 ran most of rill's panel shapes on its
// AVX-512 gemm:jit rather than AMX (Xeon, family 6 model 207), and where oneDNN does pick AMX this
// kernel is level with it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/tensor_type.h"

namespace rill::simd {

// Columns per tile row (64 bytes of bfloat16); the GEMM needs cols to be a multiple of this.
inline constexpr size_t kAmxCols = 32;
// Rows per row block: two tiles of 16.
inline constexpr int kAmxRows = 32;

// Whether this CPU has AMX tiles with bfloat16 products and the OS lets this process use them (on
// Linux the tile state must be requested once per process, ARCH_REQ_XCOMP_PERM; asked once).
// RILL_AMX=0 in the environment says no, to compare with the paths without tiles.
bool amx_bf16_available();

// 16-token blocks the packed batch of n_tokens holds: always even, so row blocks pair them.
int amx_act_blocks(int n_tokens);
// Elements (uint16_t) the packed batch of n_tokens by cols takes.
size_t amx_packed_act_elements(int n_tokens, size_t cols);
// Packs 16-token block `block` (< amx_act_blocks) of the batch (token t at act + t * cols, bfloat16)
// into out, which holds amx_packed_act_elements(n_tokens, cols); tokens past the batch are zeros.
// Threads may pack different blocks at once.
void amx_pack_act(const uint16_t* act, int n_tokens, int block, size_t cols, uint16_t* out);

// Elements (uint16_t) a packed panel of n_rows by cols takes: whole 32-row blocks.
size_t amx_packed_weight_elements(int n_rows, size_t cols);
// Packs n_rows weight rows (row r at w + r * ldw, bfloat16) into out as 16-row tiles, each 1 KiB
// contiguous and a row slice's tiles one after another, so the product reads four sequential streams;
// rows past n_rows up to the next 32 are zeros.
void amx_pack_weights(const uint16_t* w, size_t ldw, int n_rows, size_t cols, uint16_t* out);

// Rounds n_rows float32 rows (row i at rows + i * cols) to bfloat16 with f32_to_bf16's bits and writes
// them straight into their tiles as rows first .. first + n_rows - 1 of a panel of panel_rows (the rows
// up to the next 32 are zeroed with the last rows), so a dequantized panel is rounded and packed in one
// pass. Needs AVX-512 (every AMX CPU has it).
void amx_pack_weights_f32(const float* rows, int first, int n_rows, int panel_rows, size_t cols, uint16_t* out);

// Q4_0 and Q8_0 rows in rill's interleaved groups (quant/interleave.h: eight rows' block scales, then
// their payloads, block by block) dequantized, rounded and packed in one pass: rows first .. first + 7
// of a panel of panel_rows, from the group at group (cols columns), the same bits as dequantizing with
// the scalar reference and amx_pack_weights_f32. Needs AVX-512 and F16C.
bool amx_packs_groups(TensorType type);
void amx_pack_group(TensorType type, const uint8_t* group, int first, int panel_rows, size_t cols, uint16_t* out);

// Floats the product's running sums take for a panel of n_rows against n_tokens.
size_t amx_acc_elements(int n_rows, int n_tokens);
// out[t * ldo + r] = (row r of the panel) · (token t), for r < n_rows, t < n_tokens, in float32 tile
// sums. panel is amx_pack_weights' n_rows, packed amx_pack_act's n_tokens, acc amx_acc_elements'
// scratch. Runs on the calling thread; needs amx_bf16_available().
void amx_gemm_bf16(const uint16_t* panel, int n_rows, const uint16_t* packed, int n_tokens, size_t cols, float* acc, float* out,
                   size_t ldo);

}  // namespace rill::simd
