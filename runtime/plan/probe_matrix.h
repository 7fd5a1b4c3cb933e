// What the machine measurements multiply: weight matrices of any type over random bytes that read as
// ordinary numbers, laid out as the model loader leaves them, and a timer that keeps the least
// disturbed of several runs.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "runtime/model/model.h"

namespace rill {

uint64_t splitmix(uint64_t& state);

// Every byte 0x30 to 0x3b: the high byte of a half-float scale, of an F16 or BF16 value or of half an
// F32 is then a middling exponent, and an MXFP4 exponent byte (at any offset) a scale of 2^-80 or more,
// whose products stay normal. No value is NaN, infinite or a float32 subnormal, which some CPUs handle
// slowly.
void fill_weights(std::vector<uint8_t>& bytes, uint64_t seed);

struct TestMatrix {
    GgufTensor tensor;
    Weight weight;
    TestMatrix() = default;
    // The weight points at its own tensor, so a copy must point at the copy's.
    TestMatrix(const TestMatrix& other) : tensor(other.tensor), weight(other.weight) { weight.tensor = &tensor; }
    TestMatrix& operator=(const TestMatrix&) = delete;
};

// A rows × cols matrix of `type` over `bytes` from `offset`, read as the model loader lays it out
// (interleaved where the type has group kernels: the bytes are random, so only the flag matters).
TestMatrix make_matrix(TensorType type, const std::vector<uint8_t>& bytes, int rows, int cols, size_t offset = 0);

// Shortest of `runs` timed calls, after an untimed one if asked: on a shared host the least disturbed
// run is the closest to what the hardware does.
template <class F>
double best_seconds(int runs, bool warm_up, F&& call) {
    using Clock = std::chrono::steady_clock;
    if (warm_up) call();
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const auto start = Clock::now();
        call();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
    }
    return std::max(best, 1e-9);
}

}  // namespace rill
