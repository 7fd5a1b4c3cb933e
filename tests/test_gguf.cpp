// The GGUF reader: what it accepts, and the clear error it gives for each kind of broken file.
#include "catch.h"

#include "gguf_builder.h"
#include "runtime/base/error.h"
#include "runtime/format/gguf.h"
#include "runtime/model/model.h"
#include "shared_data.h"

using namespace rill;
using rill::test::GgufBuilder;

namespace {

GgufFile parse(const std::vector<uint8_t>& bytes) { return GgufFile::parse(bytes, "test.gguf"); }

// The message of the error parsing these bytes gives, or "" if they parse.
std::string parse_error(const std::vector<uint8_t>& bytes) {
    try {
        parse(bytes);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

template <typename T>
void patch(std::vector<uint8_t>& bytes, size_t offset, T value) {
    std::memcpy(bytes.data() + offset, &value, sizeof value);
}

// One tensor "w" of 32 F32s; returns bytes and where the tensor info's fields sit.
struct OneTensor {
    std::vector<uint8_t> bytes;
    size_t dims_at, type_at, offset_at;
};

OneTensor one_tensor() {
    GgufBuilder b;
    b.kv_string("general.architecture", "llama").f32_tensor("w", {32});
    OneTensor t;
    t.bytes = b.bytes();
    const size_t info = b.infos_offset();
    t.dims_at = info + 8 + 1 + 4;  // name length, "w", n_dims
    t.type_at = t.dims_at + 8;
    t.offset_at = t.type_at + 4;
    return t;
}

}  // namespace

TEST_CASE("a GGUF file's metadata values of every type are read back", "[gguf]") {
    GgufBuilder b(2);
    b.kv_u32("a.u32", 7).kv_i32("a.i32", -3).kv_f32("a.f32", 1.5f).kv_bool("a.bool", true).kv_u64("a.u64", 1ull << 40)
        .kv_f64("a.f64", 0.25).kv_string("a.str", "héllo").kv_string_array("a.strs", {"x", "", "zz"})
        .kv_f32_array("a.floats", {1, 2, 3}).kv_i32_array("a.ints", {-1, 5});
    const std::vector<uint8_t> bytes = b.bytes();  // parsed values point into these bytes
    const GgufFile g = parse(bytes);
    CHECK(g.version() == 2);
    CHECK(g.get_uint("a.u32") == 7u);
    CHECK(g.get_float("a.i32") == -3.0);
    CHECK(g.get_float("a.f32") == 1.5);
    CHECK(g.get_bool("a.bool") == true);
    CHECK(g.get_uint("a.u64") == (1ull << 40));
    CHECK(g.get_float("a.f64") == 0.25);
    CHECK(g.get_string("a.str") == "héllo");
    CHECK(g.get_string_array("a.strs") == std::vector<std::string>{"x", "", "zz"});
    CHECK(g.get_float_array("a.floats") == std::vector<float>{1, 2, 3});
    CHECK(g.get_int_array("a.ints") == std::vector<int64_t>{-1, 5});
    CHECK_FALSE(g.get_uint("absent").has_value());
    CHECK_THROWS_WITH(g.get_string("a.u32"), rill::test::contains("'a.u32' should be a string but is u32"));
    CHECK_THROWS_WITH(g.get_uint("a.i32"), rill::test::contains("negative"));
}

TEST_CASE("tensors are views into the file's bytes at the aligned data section", "[gguf]") {
    GgufBuilder b;
    b.kv_u32("general.alignment", 32).f32_tensor("a", {4, 2}, 3.0f).f32_tensor("b", {32}, -1.0f);
    const std::vector<uint8_t> bytes = b.bytes();
    const GgufFile g = parse(bytes);
    REQUIRE(g.tensors().size() == 2);
    const GgufTensor* a = g.find_tensor("a");
    REQUIRE(a != nullptr);
    CHECK(a->n_elements == 8);
    CHECK(a->n_rows() == 2);
    CHECK(a->n_bytes == 32);
    CHECK(a->data >= bytes.data());
    CHECK(a->data < bytes.data() + bytes.size());
    CHECK((a->data - bytes.data()) % 32 == 0);
    float first;
    std::memcpy(&first, g.find_tensor("b")->data, 4);
    CHECK(first == -1.0f);
    CHECK(g.find_tensor("c") == nullptr);
}

TEST_CASE("the real models in shared/ parse", "[gguf]") {
    for (const char* path : {"models/stories260K/stories260K.gguf", "models/tiny-random-llama2/llama-2-tiny-random.gguf",
                             "golden/synth-llama-A.Q4_K_M.gguf", "vocab/ggml-vocab-llama-bpe.gguf"}) {
        INFO(path);
        const GgufFile g = GgufFile::open(test::shared_path(path));
        CHECK(g.version() >= 2);
        CHECK(g.get_string("general.architecture").has_value());
    }
}

TEST_CASE("a file cut short anywhere is an error naming the truncation, never a crash", "[gguf][corrupt]") {
    const std::string file = test::read_text(test::shared_path("models/stories260K/stories260K.gguf"));
    const std::vector<uint8_t> full(file.begin(), file.end());
    // 20 cut points spread over the header (where every field is) and the tensor data.
    std::vector<size_t> cuts = {0, 1, 3, 4, 7, 8, 15, 16, 23, 24, 30, 100, 1000, 5000, 20000};
    for (size_t k = 1; k <= 5; ++k) cuts.push_back(full.size() - k * full.size() / 6);
    REQUIRE(cuts.size() == 20);
    for (const size_t cut : cuts) {
        INFO("cut at " << cut);
        const std::vector<uint8_t> part(full.begin(), full.begin() + long(cut));
        const std::string error = parse_error(part);
        CHECK_THAT(error, rill::test::contains("truncated") || rill::test::contains("past the end") || rill::test::contains("exceeds") ||
                              rill::test::contains("cannot fit"));
        CHECK_THAT(error, rill::test::starts_with("test.gguf: "));
    }
}

TEST_CASE("wrong magic bytes are reported as not a GGUF file", "[gguf][corrupt]") {
    auto bytes = one_tensor().bytes;
    bytes[0] = 'X';
    CHECK_THAT(parse_error(bytes), rill::test::contains("not a GGUF file"));
}

TEST_CASE("an unsupported GGUF version is reported with the versions rill reads", "[gguf][corrupt]") {
    auto bytes = one_tensor().bytes;
    patch<uint32_t>(bytes, 4, 99);
    CHECK_THAT(parse_error(bytes), rill::test::contains("unsupported GGUF version 99"));
    patch<uint32_t>(bytes, 4, 1);
    CHECK_THAT(parse_error(bytes), rill::test::contains("unsupported GGUF version 1"));
}

TEST_CASE("a tensor offset past the end of the file is reported with the tensor's name", "[gguf][corrupt]") {
    auto t = one_tensor();
    patch<uint64_t>(t.bytes, t.offset_at, 1u << 20);
    CHECK_THAT(parse_error(t.bytes), rill::test::contains("tensor 'w'") && rill::test::contains("past the end of the file"));
    patch<uint64_t>(t.bytes, t.offset_at, ~uint64_t(0) - 31);  // offset + size would wrap around
    CHECK_THAT(parse_error(t.bytes), rill::test::contains("tensor 'w'"));
}

TEST_CASE("a misaligned tensor offset is reported", "[gguf][corrupt]") {
    auto t = one_tensor();
    patch<uint64_t>(t.bytes, t.offset_at, 4);
    CHECK_THAT(parse_error(t.bytes), rill::test::contains("not a multiple of the alignment"));
}

TEST_CASE("dimensions whose product overflows are reported, not wrapped", "[gguf][corrupt]") {
    GgufBuilder b;
    b.tensor("big", {1ull << 32, 1ull << 32}, 0, {});
    CHECK_THAT(parse_error(b.bytes()), rill::test::contains("tensor 'big'") && rill::test::contains("more elements than fit"));
    GgufBuilder c;  // fits in 63 bits as elements but not as bytes of F32
    c.tensor("wide", {1ull << 31, 1ull << 31}, 0, {});
    CHECK_THAT(parse_error(c.bytes()), rill::test::contains("tensor 'wide'"));
}

TEST_CASE("zero or more than four dimensions are reported", "[gguf][corrupt]") {
    GgufBuilder b;
    b.tensor("z", {4, 0}, 0, {});
    CHECK_THAT(parse_error(b.bytes()), rill::test::contains("dimension 1 is zero"));
    auto t = one_tensor();
    patch<uint32_t>(t.bytes, t.dims_at - 4, 5);
    CHECK_THAT(parse_error(t.bytes), rill::test::contains("5 dimensions"));
}

TEST_CASE("an unknown tensor type id is reported with the id", "[gguf][corrupt]") {
    auto t = one_tensor();
    patch<uint32_t>(t.bytes, t.type_at, 1234);
    CHECK_THAT(parse_error(t.bytes), rill::test::contains("unknown tensor type id 1234"));
}

TEST_CASE("a ggml type rill cannot read is reported by name", "[gguf][corrupt]") {
    auto t = one_tensor();
    patch<uint32_t>(t.bytes, t.type_at, 15);  // Q8_K: ggml's activation type, never a weight
    CHECK_THAT(parse_error(t.bytes), rill::test::contains("Q8_K is not supported"));
}

TEST_CASE("a row length that is not a whole number of blocks is reported", "[gguf][corrupt]") {
    GgufBuilder b;
    b.tensor("q", {33}, 2, std::vector<uint8_t>(40));  // Q4_0 blocks hold 32
    CHECK_THAT(parse_error(b.bytes()), rill::test::contains("not a multiple of the Q4_0 block size 32"));
}

TEST_CASE("a duplicated tensor name is reported", "[gguf][corrupt]") {
    GgufBuilder b;
    b.f32_tensor("twice", {8}).f32_tensor("twice", {8});
    CHECK_THAT(parse_error(b.bytes()), rill::test::contains("tensor 'twice': name appears twice"));
}

TEST_CASE("a duplicated metadata key is reported", "[gguf][corrupt]") {
    GgufBuilder b;
    b.kv_u32("k", 1).kv_u32("k", 2);
    CHECK_THAT(parse_error(b.bytes()), rill::test::contains("metadata 'k': key appears twice"));
}

TEST_CASE("a string length of 2^63 is reported without allocating it", "[gguf][corrupt]") {
    GgufBuilder b;
    b.kv_string("general.name", "x");
    auto bytes = b.bytes();
    patch<uint64_t>(bytes, 24 + 8 + 12 + 4, uint64_t(1) << 63);  // the value's length field
    CHECK_THAT(parse_error(bytes), rill::test::contains("string length 9223372036854775808 exceeds"));
    patch<uint64_t>(bytes, 24, uint64_t(1) << 63);  // the key's length field
    CHECK_THAT(parse_error(bytes), rill::test::contains("string length 9223372036854775808 exceeds"));
}

TEST_CASE("huge counts of tensors, keys or array elements are reported before allocating", "[gguf][corrupt]") {
    auto bytes = one_tensor().bytes;
    patch<uint64_t>(bytes, 8, uint64_t(1) << 60);
    CHECK_THAT(parse_error(bytes), rill::test::contains("tensor count 1152921504606846976 cannot fit"));
    bytes = one_tensor().bytes;
    patch<uint64_t>(bytes, 16, ~uint64_t(0));
    CHECK_THAT(parse_error(bytes), rill::test::contains("metadata count"));
    GgufBuilder b;
    b.kv_i32_array("arr", {1, 2});
    bytes = b.bytes();
    patch<uint64_t>(bytes, 24 + 8 + 3 + 4 + 4, uint64_t(1) << 62);
    CHECK_THAT(parse_error(bytes), rill::test::contains("metadata 'arr': array of 4611686018427387904 elements cannot fit"));
}

TEST_CASE("unknown metadata value types and bad bools are reported", "[gguf][corrupt]") {
    GgufBuilder b;
    b.kv_u32("k", 1);
    auto bytes = b.bytes();
    patch<uint32_t>(bytes, 24 + 8 + 1, 77);
    CHECK_THAT(parse_error(bytes), rill::test::contains("metadata 'k': unknown value type 77"));
    GgufBuilder c;
    c.kv_bool("flag", true);
    bytes = c.bytes();
    bytes[24 + 8 + 4 + 4] = 7;
    CHECK_THAT(parse_error(bytes), rill::test::contains("neither 0 nor 1"));
}

TEST_CASE("general.alignment must be a power of two", "[gguf][corrupt]") {
    GgufBuilder b;
    b.kv_u32("general.alignment", 24);
    CHECK_THAT(parse_error(b.bytes()), rill::test::contains("not a power of two"));
}

TEST_CASE("a missing or unreadable file is an error naming it", "[gguf]") {
    CHECK_THROWS_WITH(GgufFile::open("/nonexistent/model.gguf"), rill::test::contains("/nonexistent/model.gguf: cannot open"));
    CHECK_THROWS_WITH(GgufFile::open("/tmp"), rill::test::contains("not a regular file"));
}

TEST_CASE("reading into anonymous memory gives the same tensors as memory-mapping", "[gguf]") {
    const std::string path = test::shared_path("golden/synth-llama-A.Q4_0.gguf");
    const GgufFile mapped = GgufFile::open(path, [] { LoadOptions o; o.use_mmap = true; return o; }());
    const GgufFile read = GgufFile::open(path, [] { LoadOptions o; o.use_mmap = false; o.lock = true; return o; }());
    REQUIRE(mapped.tensors().size() == read.tensors().size());
    for (size_t i = 0; i < mapped.tensors().size(); ++i) {
        const GgufTensor &a = mapped.tensors()[i], &b = read.tensors()[i];
        CHECK(a.name == b.name);
        CHECK(std::memcmp(a.data, b.data, a.n_bytes) == 0);
    }
}
