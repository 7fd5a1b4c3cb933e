// The GGUF writer: what it writes reads back identically, and a failed or abandoned write leaves nothing.
#include "catch.h"

#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include "runtime/base/error.h"
#include "runtime/format/gguf.h"
#include "runtime/format/gguf_writer.h"
#include "shared_data.h"

using namespace rill;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
    return (fs::temp_directory_path() / ("rill-writer-" + std::to_string(::getpid()) + "-" + name)).string();
}

bool leftovers(const std::string& path) {
    for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
        if (entry.path().string().rfind(path, 0) == 0) return true;
    return false;
}

}  // namespace

TEST_CASE("metadata of every type and streamed tensors read back identically", "[gguf_writer]") {
    const std::string path = temp_path("roundtrip.gguf");
    {
        GgufWriter w(path);
        w.set_string("general.architecture", "llama");
        w.set_u32("a.u32", 7);
        w.set_i32("a.i32", -7);
        w.set_f32("a.f32", 0.5f);
        w.set_u64("a.u64", 1ull << 40);
        w.set_bool("a.bool", true);
        w.set_strings("a.strs", {"x", "", "yz"});
        w.set_f32s("a.f32s", {1, 2});
        w.set_i32s("a.i32s", {-1, 3});
        w.add_tensor("f", TensorType::F32, {4, 3});
        w.add_tensor("q", TensorType::Q8_0, {64});
        w.begin_data();
        std::vector<uint8_t> f(48);
        for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
        w.write_data(std::span(f).subspan(0, 10));  // in pieces, as a stream would
        w.write_data(std::span(f).subspan(10));
        std::vector<uint8_t> q(68, 0x11);
        w.write_data(q);
        w.finish();
    }
    const GgufFile g = GgufFile::open(path);
    CHECK(g.get_string("general.architecture") == "llama");
    CHECK(g.get_uint("a.u32") == 7u);
    CHECK(g.get_float("a.i32") == -7.0);
    CHECK(g.get_float("a.f32") == 0.5);
    CHECK(g.get_uint("a.u64") == (1ull << 40));
    CHECK(g.get_bool("a.bool") == true);
    CHECK(g.get_string_array("a.strs") == std::vector<std::string>{"x", "", "yz"});
    CHECK(g.get_float_array("a.f32s") == std::vector<float>{1, 2});
    CHECK(g.get_int_array("a.i32s") == std::vector<int64_t>{-1, 3});
    REQUIRE(g.tensors().size() == 2);
    CHECK(g.find_tensor("f")->data[47] == 47);
    CHECK(g.find_tensor("q")->type == TensorType::Q8_0);
    CHECK(g.find_tensor("q")->data[67] == 0x11);
    fs::remove(path);
}

TEST_CASE("a real model copied through the writer is byte-identical in every tensor", "[gguf_writer]") {
    const GgufFile src = GgufFile::open(test::shared_path("golden/synth-llama-A.Q4_K_M.gguf"));
    const std::string path = temp_path("copy.gguf");
    {
        GgufWriter w(path);
        for (const auto& [key, value] : src.metadata())
            if (key != "general.alignment") w.set_value(key, value);
        for (const GgufTensor& t : src.tensors())
            w.add_tensor(t.name, t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
        w.begin_data();
        for (const GgufTensor& t : src.tensors()) w.write_data(std::span(t.data, t.n_bytes));
        w.finish();
    }
    const GgufFile copy = GgufFile::open(path);
    CHECK(copy.metadata().size() == src.metadata().size());
    CHECK(copy.get_string_array("tokenizer.ggml.tokens") == src.get_string_array("tokenizer.ggml.tokens"));
    for (const GgufTensor& t : src.tensors()) {
        const GgufTensor* c = copy.find_tensor(t.name);
        REQUIRE(c != nullptr);
        CHECK(c->n_bytes == t.n_bytes);
        CHECK(std::memcmp(c->data, t.data, t.n_bytes) == 0);
    }
    CHECK(copy.file_size() == src.file_size());
    fs::remove(path);
}

TEST_CASE("an abandoned write leaves no file behind", "[gguf_writer]") {
    const std::string path = temp_path("abandoned.gguf");
    {
        GgufWriter w(path);
        w.add_tensor("f", TensorType::F32, {8});
        w.begin_data();
        const std::vector<uint8_t> half(16);
        w.write_data(half);
    }  // destroyed unfinished, as when an error or Ctrl-C unwinds
    CHECK_FALSE(leftovers(path));
}

TEST_CASE("finishing with a tensor incomplete is an error and leaves no file", "[gguf_writer]") {
    const std::string path = temp_path("incomplete.gguf");
    {
        GgufWriter w(path);
        w.add_tensor("f", TensorType::F32, {8});
        w.begin_data();
        CHECK_THROWS_WITH(w.finish(), rill::test::contains("tensor 'f' is incomplete"));
    }
    CHECK_FALSE(leftovers(path));
}

TEST_CASE("a full disk is a clear error and leaves no file", "[gguf_writer]") {
    // A file-size limit stands in for a full disk: writes past it fail as they would on ENOSPC.
    const std::string path = temp_path("full.gguf");
    struct rlimit old {};
    getrlimit(RLIMIT_FSIZE, &old);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 64 * 1024;
    setrlimit(RLIMIT_FSIZE, &small);
    std::string error;
    try {
        GgufWriter w(path);
        w.add_tensor("big", TensorType::F32, {1 << 20});
        w.begin_data();
        const std::vector<uint8_t> chunk(1 << 16);
        for (int i = 0; i < 64; ++i) w.write_data(chunk);
        w.finish();
    } catch (const Error& e) {
        error = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CHECK_THAT(error, rill::test::contains("write failed (is the disk full?)"));
    CHECK_FALSE(leftovers(path));
}

TEST_CASE("declaring a tensor twice or out of order is refused", "[gguf_writer]") {
    const std::string path = temp_path("misuse.gguf");
    GgufWriter w(path);
    w.add_tensor("t", TensorType::F32, {8});
    CHECK_THROWS_WITH(w.add_tensor("t", TensorType::F32, {8}), rill::test::contains("declared twice"));
    CHECK_THROWS_WITH(w.add_tensor("q", TensorType::Q4_0, {8}), rill::test::contains("not a multiple"));
    w.set_u32("k", 1);
    CHECK_THROWS_WITH(w.set_u32("k", 2), rill::test::contains("set twice"));
    w.begin_data();
    CHECK_THROWS_WITH(w.set_u32("late", 1), rill::test::contains("after tensor data began"));
}

TEST_CASE("the data section ends padded to the alignment after the last tensor too, as ggml reads it", "[gguf_writer]") {
    const std::string path = temp_path("padded.gguf");
    {
        GgufWriter w(path);
        w.add_tensor("a", TensorType::F32, {3});
        w.add_tensor("b", TensorType::F32, {1});  // 4 bytes: ggml expects 28 bytes of padding after it
        w.begin_data();
        const float a[3] = {1, 2, 3}, b[1] = {4};
        w.write_data({reinterpret_cast<const uint8_t*>(a), sizeof a});
        w.write_data({reinterpret_cast<const uint8_t*>(b), sizeof b});
        w.finish();
    }
    const GgufFile g = GgufFile::open(path);
    CHECK(fs::file_size(path) % 32 == 0);
    CHECK(g.find_tensor("b")->offset == 32);
    fs::remove(path);
}
