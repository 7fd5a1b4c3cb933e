// UTF-8 helpers the tokenizers share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/utf8.h"

namespace rill {

// Length of the sequence a lead byte starts; a stray continuation or invalid byte counts as 1.
inline size_t utf8_sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xe0) == 0xc0) return 2;
    if ((lead & 0xf0) == 0xe0) return 3;
    if ((lead & 0xf8) == 0xf0) return 4;
    return 1;
}

// Decodes the code point at s[i], advancing i; invalid bytes decode as themselves (one byte each).
inline uint32_t next_code_point(std::string_view s, size_t& i) {
    const uint8_t lead = uint8_t(s[i]);
    const size_t len = utf8_sequence_length(lead);
    if (len == 1 || i + len > s.size()) {
        ++i;
        return lead;
    }
    uint32_t cp = lead & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
        const uint8_t c = uint8_t(s[i + k]);
        if ((c & 0xc0) != 0x80) {
            ++i;
            return lead;
        }
        cp = (cp << 6) | (c & 0x3f);
    }
    i += len;
    return cp;
}

}  // namespace rill
