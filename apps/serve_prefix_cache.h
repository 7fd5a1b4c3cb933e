// --cache-ram: a bounded store of conversations' keys and values in RAM, beyond the slots. When a
// slot is taken by a request that does not continue its conversation, that conversation's state is
// kept here; when it returns and no slot holds it any more, its state is loaded back into the slot
// it is given, so it evaluates only its new turn. The least recently used entries go first.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace rill::serve {

// How many leading tokens two sequences share.
size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

class PrefixCache {
public:
    explicit PrefixCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

    // Keeps a session state (Session::save_state) of these tokens; an entry whose tokens this one
    // extends is replaced. A state larger than the whole capacity is not kept.
    void put(std::vector<int32_t> tokens, std::vector<uint8_t> state);
    // The entry sharing the longest prefix with `prompt`, if that prefix is longer than `at_least`;
    // `prefix` gets its length. The pointer is valid until the next put.
    struct Entry {
        std::vector<int32_t> tokens;
        std::vector<uint8_t> state;
        uint64_t last_used = 0;
    };
    const Entry* find(std::span<const int32_t> prompt, size_t at_least, size_t& prefix);

    uint64_t bytes() const { return bytes_; }
    size_t size() const { return entries_.size(); }

private:
    uint64_t capacity_, bytes_ = 0, clock_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace rill::serve
