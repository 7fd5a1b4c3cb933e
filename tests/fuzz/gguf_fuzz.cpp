// libFuzzer harness: any bytes through the GGUF reader, the model validator, the vocabulary loader
// and the tokenizer it builds.
// The only acceptable outcomes are success or a rill::Error; a crash, hang, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/error.h"
#include "runtime/format/gguf.h"
#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/vocab.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        rill::GgufFile file = rill::GgufFile::parse(std::span(data, size), "fuzz.gguf");
        for (const auto& [key, value] : file.metadata()) {
            (void)file.get_string_array(key).size();  // exercise the typed getters on every value
        }
        try {
            const rill::Vocab vocab = rill::load_vocab(file);
            const auto ids = rill::tokenize(vocab, "Hello world! <s> 123 ünï 🙂", {.add_special = true, .parse_special = true});
            (void)rill::detokenize(vocab, ids);
        } catch (const rill::Error&) {
        }
        const auto model = rill::model_from_gguf(std::move(file));
        (void)model->weight_bytes();
    } catch (const rill::Error&) {
    }
    return 0;
}
