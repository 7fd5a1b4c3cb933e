// A machine you do not own, for `rill plan --machine FILE`: a few figures from its data sheet or a
// quick measurement turned into a profile the planner reads as if measured. What is not given is
// assumed from how rill's backends fared against the same figures on a measured machine (the
// efficiencies below), so a prediction is only as good as the spec and those shares.
//
//   {"name": "laptop, 8 Zen 4 cores, DDR5-5600 two channels",
//    "cores": 8, "read_gbps": 70,
//    "peak_gflops": {"f32": 900, "bf16": 1800, "int8": 3600},
//    "kernels": "avx512"}
//
// read_gbps: what all cores read from memory together (about 0.8 of the channels' sum); peak_gflops:
// every core busy, f32 counted as 2 per fused multiply-add, bf16 and int8 the same way per product
// (omit or 0 where the CPU lacks the instructions); kernels: the rill kernel path the CPU would run
// (avx512 needs AVX-512 BF16 and VNNI).
#pragma once
#include <nlohmann/json.hpp>

#include "runtime/plan/machine_profile.h"

namespace rill {

// Shares of a spec's figures that rill reached on the measured Zen 5 (2 cores, README "Planning"):
// decode against the read bandwidth (tg64 on tinyllama: 59-85% by type), the int8 GEMM against
// oneDNN's u8s8 rate (878 of 1,501 GOP/s), the bf16 backend against oneDNN's bf16 matmul (486-605 of
// 787 GFLOP/s), float32 GEMM on dequantized panels and batch attention against the FMA peak.
inline constexpr double kSpecDecodeShare = 0.70;
inline constexpr double kSpecInt8Share = 0.55;
inline constexpr double kSpecBf16Share = 0.60;
inline constexpr double kSpecF32Share = 0.55;
inline constexpr double kSpecAttentionShare = 0.25;
// Decode attention's rate against the FMA peak (7.5 ns per head and position at head size 64 against
// 432 GFLOP/s), and a decode product's fixed cost on a team (measured 10-60 us on the 2-core VM).
inline constexpr double kSpecDecodeAttentionShare = 0.08;
inline constexpr double kSpecDecodeCallUs = 10;

// Throws rill::Error naming the field when the JSON is not a spec.
MachineProfile profile_from_spec(const nlohmann::json& spec);
// A full profile (from `rill plan --remeasure --json` on that machine) or a spec, whichever the JSON is.
MachineProfile profile_from_file(const std::string& path);

}  // namespace rill
