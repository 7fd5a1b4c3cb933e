// The KL-divergence base file (rill perplexity --kl-divergence-base), which a user may download or take
// from llama.cpp: its header, token list and records are read from arbitrary bytes, and the records that
// can be read are compared with a model's logits. Errors are rill::Errors; nothing may crash, hang or
// allocate what the bytes merely promise.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/quality/kl_divergence.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::FILE* stream = fmemopen(const_cast<uint8_t*>(data), size, "rb");
    if (!stream) return 0;
    try {
        rill::KlBaseFile base = rill::KlBaseFile::read_from(stream, "fuzz input");
        const rill::KlBaseHeader& h = base.header();
        if (h.n_vocab > 65536) return 0;  // a valid file of a large vocabulary: records too big to be worth fuzzing
        std::vector<uint16_t> record(rill::record_size(h.n_vocab));
        std::vector<float> logits(size_t(h.n_vocab));
        for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(i % 7) * 0.5f;
        rill::KlAccumulator acc;
        for (int r = 0; r < 4; ++r) {
            base.read_record(record);
            acc.add(rill::compare_with_base(record, logits, h.tokens[size_t(r) % h.tokens.size()]));
        }
        (void)acc.summary();
    } catch (const rill::Error&) {
    }
    return 0;
}
