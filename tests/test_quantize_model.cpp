// rill quantize's core: from the golden F32 model to every golden format, compared with llama.cpp's files.
#include "catch.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "runtime/base/error.h"
#include "runtime/make/quantize_model.h"
#include "shared_data.h"

using namespace rill;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("rill-quantize-" + std::to_string(::getpid()) + "-" + name)).string();
}

// Root-mean-square error of every quantized matrix of `file` against the F32 source, over all of them.
double matrix_rmse(const GgufFile& file, const GgufFile& source) {
    double sq = 0;
    uint64_t n = 0;
    for (const GgufTensor& t : file.tensors()) {
        if (t.n_dims < 2) continue;
        const GgufTensor* f = source.find_tensor(t.name);
        std::vector<float> row(t.ne[0]);
        for (uint64_t r = 0; r < t.n_rows(); ++r) {
            dequantize_row(t.type, t.data + r * t.row_bytes(), row.data(), t.ne[0]);
            const float* ref = reinterpret_cast<const float*>(f->data) + r * t.ne[0];
            for (uint64_t i = 0; i < t.ne[0]; ++i) sq += double(row[i] - ref[i]) * double(row[i] - ref[i]);
        }
        n += t.n_elements;
    }
    return std::sqrt(sq / double(n));
}

GgufFile quantized(const GgufFile& source, const std::string& type, bool pure, int threads = 2) {
    const std::string path = temp_path(type + (pure ? "-pure" : "") + "-t" + std::to_string(threads) + ".gguf");
    QuantizeOptions options;
    options.recipe = *find_recipe(type);
    options.pure = pure;
    options.n_threads = threads;
    quantize_model(source, path, options);
    GgufFile file = GgufFile::open(path, [] { LoadOptions o; o.use_mmap = false; return o; }());  // read into memory, so the file can go
    std::filesystem::remove(path);
    return file;
}

}  // namespace

TEST_CASE("quantizing the golden F32 model with --pure reproduces llama.cpp's tensor bytes", "[quantize]") {
    const GgufFile source = GgufFile::open(test::shared_path("golden/synth-llama-A.F32.gguf"));
    for (const char* type : {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}) {
        INFO(type);
        const GgufFile ours = quantized(source, type, true);
        const GgufFile theirs = GgufFile::open(test::shared_path(std::string("golden/synth-llama-A.") + type + ".gguf"));
        REQUIRE(ours.tensors().size() == theirs.tensors().size());
        for (const GgufTensor& t : theirs.tensors()) {
            INFO(t.name);
            const GgufTensor* o = ours.find_tensor(t.name);
            REQUIRE(o != nullptr);
            REQUIRE(o->type == t.type);
            REQUIRE(o->n_bytes == t.n_bytes);
            CHECK(std::memcmp(o->data, t.data, t.n_bytes) == 0);
        }
        CHECK(ours.get_uint("general.file_type") == find_recipe(type)->file_type);
        CHECK(ours.get_string_array("tokenizer.ggml.tokens") == source.get_string_array("tokenizer.ggml.tokens"));
    }
}

TEST_CASE("every other golden format's matrices are at most 1.02 x llama.cpp's RMSE", "[quantize]") {
    const GgufFile source = GgufFile::open(test::shared_path("golden/synth-llama-A.F32.gguf"));
    for (const char* type : {"Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "F16", "BF16"}) {
        INFO(type);
        const std::string name(type);
        const bool pure = name.find("_K_M") == std::string::npos;
        const GgufFile theirs = GgufFile::open(test::shared_path("golden/synth-llama-A." + name + ".gguf"));
        const GgufFile ours = quantized(source, name, pure);
        for (const GgufTensor& t : theirs.tensors()) CHECK(ours.find_tensor(t.name)->type == t.type);
        const double ours_rmse = matrix_rmse(ours, source), theirs_rmse = matrix_rmse(theirs, source);
        INFO("rill " << ours_rmse << " llama.cpp " << theirs_rmse);
        CHECK(ours_rmse <= 1.02 * theirs_rmse);
    }
}

TEST_CASE("the quantized bytes do not depend on the thread count", "[quantize]") {
    const GgufFile source = GgufFile::open(test::shared_path("golden/synth-llama-A.F32.gguf"));
    const GgufFile one = quantized(source, "Q4_K_M", false, 1), two = quantized(source, "Q4_K_M", false, 2);
    for (const GgufTensor& t : one.tensors()) CHECK(std::memcmp(t.data, two.find_tensor(t.name)->data, t.n_bytes) == 0);
}

TEST_CASE("a cancelled quantization leaves no output file", "[quantize]") {
    const GgufFile source = GgufFile::open(test::shared_path("golden/synth-llama-A.F32.gguf"));
    const std::string path = temp_path("cancelled.gguf");
    std::atomic<bool> cancel{true};
    QuantizeOptions options;
    options.recipe = *find_recipe("Q4_0");
    options.cancel = &cancel;
    CHECK_THROWS_WITH(quantize_model(source, path, options), rill::test::contains("cancelled"));
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
        CHECK(entry.path().string().rfind(path, 0) != 0);
}
