// Importance-matrix files in llama-imatrix's two formats (runtime/quality/imatrix_file.h).
#include "catch.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "runtime/base/error.h"
#include "runtime/quality/imatrix_file.h"

using namespace rill;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("rill-imatrix-" + std::to_string(::getpid()) + "-" + name)).string();
}

// A dense matrix of 4 columns that saw 10 tokens, a two-expert matrix of 2 columns whose second expert
// saw none, computed on 3 chunks of 8.
Imatrix sample() {
    Imatrix m;
    m.entries["blk.0.attn_q.weight"] = {{10, 20, 30, 40}, {10}};
    m.entries["blk.0.ffn_down_exps.weight"] = {{6, 3, 0, 0}, {3, 0}};
    m.datasets = {"wiki.train.raw"};
    m.chunk_count = 3;
    m.chunk_size = 8;
    return m;
}

}  // namespace

TEST_CASE("an imatrix's importance is each matrix's mean square, 1 for an expert that saw no token", "[imatrix]") {
    const Imatrix m = sample();
    CHECK(m.importance("blk.0.attn_q.weight") == std::vector<float>{1, 2, 3, 4});
    CHECK(m.importance("blk.0.ffn_down_exps.weight") == std::vector<float>{2, 1, 1, 1});
    CHECK(m.importance("output.weight").empty());
}

TEST_CASE("a GGUF imatrix reads back as written, experts and metadata included", "[imatrix]") {
    const std::string path = temp_path("m.gguf");
    write_imatrix_gguf(sample(), path);
    const Imatrix back = read_imatrix(path);
    std::filesystem::remove(path);
    CHECK_FALSE(back.legacy);
    CHECK(back.datasets == std::vector<std::string>{"wiki.train.raw"});
    CHECK(back.chunk_count == 3);
    CHECK(back.chunk_size == 8);
    REQUIRE(back.entries.size() == 2);
    CHECK(back.entries.at("blk.0.ffn_down_exps.weight").sums == std::vector<float>{6, 3, 0, 0});
    CHECK(back.entries.at("blk.0.ffn_down_exps.weight").counts == std::vector<int64_t>{3, 0});
    CHECK(back.importance("blk.0.attn_q.weight") == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("a legacy imatrix gives the same importance as the GGUF one", "[imatrix]") {
    const std::string path = temp_path("m.dat");
    write_imatrix_legacy(sample(), path);
    const Imatrix back = read_imatrix(path);
    std::filesystem::remove(path);
    CHECK(back.legacy);
    CHECK(back.chunk_count == 3);
    CHECK(back.datasets == std::vector<std::string>{"wiki.train.raw"});
    // ncall = ceil(10 tokens / 8 per chunk) = 2: values are mean squares times 2, read back over 2.
    CHECK(back.entries.at("blk.0.attn_q.weight").counts == std::vector<int64_t>{2});
    CHECK(back.importance("blk.0.attn_q.weight") == std::vector<float>{1, 2, 3, 4});
    CHECK(back.importance("blk.0.ffn_down_exps.weight") == std::vector<float>{2, 1, 1, 1});
}

TEST_CASE("a GGUF that is not an imatrix, and a cut-short legacy file, are refused by name", "[imatrix][corrupt]") {
    const std::string path = temp_path("bad.dat");
    write_imatrix_legacy(sample(), path);
    std::filesystem::resize_file(path, 30);  // inside the first entry's ncall
    CHECK_THROWS_WITH(read_imatrix(path), rill::test::contains(path) && rill::test::contains("ends inside"));
    std::filesystem::remove(path);
    CHECK_THROWS_WITH(read_imatrix(RILL_SHARED_DIR "/models/stories260K/stories260K.gguf"), rill::test::contains("is not an imatrix"));
}
