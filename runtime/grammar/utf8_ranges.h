// Code point ranges as UTF-8 byte sequences: [lo, hi] becomes a few sequences of byte ranges
// (e.g. U+0080..U+07FF is [C2-DF][80-BF]), so a character class can be matched a byte at a time.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/utf8.h"

namespace rill::grammar {

struct CodeRange {
    uint32_t lo, hi;
};
struct ByteRange {
    uint8_t lo, hi;
};

// The code point at the start of `s`; length 0 if it is not well-formed UTF-8.
inline uint32_t decode_utf8(std::string_view s, size_t& length) {
    length = 0;
    if (s.empty()) return 0;
    const uint8_t b0 = uint8_t(s[0]);
    size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n == 0 || s.size() < n) return 0;
    uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (size_t i = 1; i < n; ++i) {
        if ((uint8_t(s[i]) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (uint8_t(s[i]) & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    length = n;
    return cp;
}

// Sorted, merged, complemented if asked, and without the surrogates (which UTF-8 cannot encode).
inline std::vector<CodeRange> normalise_ranges(std::vector<CodeRange> ranges, bool negated) {
    std::sort(ranges.begin(), ranges.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
    std::vector<CodeRange> merged;
    for (const CodeRange& r : ranges) {
        if (!merged.empty() && r.lo <= merged.back().hi + 1) merged.back().hi = std::max(merged.back().hi, r.hi);
        else merged.push_back(r);
    }
    if (negated) {
        std::vector<CodeRange> complement;
        uint32_t next = 0;
        for (const CodeRange& r : merged) {
            if (r.lo > next) complement.push_back({next, r.lo - 1});
            next = r.hi + 1;
        }
        if (next <= 0x10FFFF) complement.push_back({next, 0x10FFFF});
        merged = std::move(complement);
    }
    std::vector<CodeRange> out;
    for (const CodeRange& r : merged) {
        if (r.hi < 0xD800 || r.lo > 0xDFFF) {
            out.push_back(r);
            continue;
        }
        if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
        if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
    }
    return out;
}

// Appends the byte-range sequences that encode exactly the code points of `r` (none below 0x80
// expected by the caller, though they work). Split first where the encoded length changes, then
// where a continuation byte would not cover its whole 0x80..0xBF span, until every position is
// one contiguous byte range.
inline void utf8_sequences(CodeRange r, std::vector<std::vector<ByteRange>>& out) {
    if (r.lo > r.hi) return;
    static constexpr uint32_t kLengthEnds[3] = {0x7F, 0x7FF, 0xFFFF};
    for (const uint32_t end : kLengthEnds)
        if (r.lo <= end && r.hi > end) {
            utf8_sequences({r.lo, end}, out);
            utf8_sequences({end + 1, r.hi}, out);
            return;
        }
    if (r.hi < 0x80) {
        out.push_back({{uint8_t(r.lo), uint8_t(r.hi)}});
        return;
    }
    const int n = r.hi < 0x800 ? 2 : r.hi < 0x10000 ? 3 : 4;
    for (int i = 1; i < n; ++i) {
        const uint32_t mask = (uint32_t(1) << (6 * i)) - 1;
        if ((r.lo & ~mask) != (r.hi & ~mask)) {
            if ((r.lo & mask) != 0) {
                utf8_sequences({r.lo, r.lo | mask}, out);
                utf8_sequences({(r.lo | mask) + 1, r.hi}, out);
                return;
            }
            if ((r.hi & mask) != mask) {
                utf8_sequences({r.lo, (r.hi & ~mask) - 1}, out);
                utf8_sequences({r.hi & ~mask, r.hi}, out);
                return;
            }
        }
    }
    std::string lo, hi;
    append_utf8(lo, r.lo);
    append_utf8(hi, r.hi);
    std::vector<ByteRange> seq;
    for (size_t i = 0; i < lo.size(); ++i) seq.push_back({uint8_t(lo[i]), uint8_t(hi[i])});
    out.push_back(std::move(seq));
}

}  // namespace rill::grammar
