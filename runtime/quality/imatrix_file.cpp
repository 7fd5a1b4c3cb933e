#include "runtime/quality/imatrix_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/base/error.h"
#include "runtime/format/gguf.h"
#include "runtime/format/gguf_writer.h"

namespace rill {
namespace {

constexpr const char* kSums = ".in_sum2";
constexpr const char* kCounts = ".counts";

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct File {
    std::unique_ptr<FILE, int (*)(FILE*)> f{nullptr, &std::fclose};
    std::string path;
    long size = 0;
    void read(void* out, size_t n, const char* what) {
        if (std::fread(out, 1, n, f.get()) != n) throw Error(path + ": the imatrix file ends inside " + std::string(what));
    }
    int32_t read_i32(const char* what) {
        int32_t v;
        read(&v, 4, what);
        return v;
    }
    long left() const { return size - std::ftell(f.get()); }
};

Imatrix read_legacy(const std::string& path) {
    File in;
    in.path = path;
    in.f.reset(std::fopen(path.c_str(), "rb"));
    if (!in.f) throw Error(path + ": cannot open");
    std::fseek(in.f.get(), 0, SEEK_END);
    in.size = std::ftell(in.f.get());
    std::fseek(in.f.get(), 0, SEEK_SET);
    Imatrix m;
    m.legacy = true;
    const int32_t n = in.read_i32("its entry count");
    if (n < 1 || int64_t(n) * 12 > in.left()) throw Error(path + ": not an imatrix file (neither GGUF nor a legacy .dat with entries)");
    for (int32_t e = 0; e < n; ++e) {
        const int32_t len = in.read_i32("an entry name's length");
        if (len < 1 || len > in.left()) throw Error(path + ": entry " + std::to_string(e) + " has a name length of " + std::to_string(len));
        std::string name(size_t(len), '\0');
        in.read(name.data(), size_t(len), "an entry name");
        ImatrixEntry entry;
        entry.counts = {in.read_i32("an entry's ncall")};
        const int32_t nval = in.read_i32("an entry's value count");
        if (nval < 1 || int64_t(nval) * 4 > in.left())
            throw Error(path + ": entry '" + name + "' claims " + std::to_string(nval) + " values, more than the file holds");
        entry.sums.resize(size_t(nval));
        in.read(entry.sums.data(), size_t(nval) * 4, "an entry's values");
        m.entries[name] = std::move(entry);
    }
    if (in.left() >= 4) {  // the trailer is optional
        m.chunk_count = in.read_i32("the chunk count");
        if (in.left() >= 4) {
            const int32_t len = in.read_i32("the dataset name's length");
            if (len < 0 || len > in.left()) throw Error(path + ": the dataset name's length (" + std::to_string(len) + ") is wrong");
            std::string dataset(size_t(len), '\0');
            in.read(dataset.data(), size_t(len), "the dataset name");
            m.datasets.push_back(dataset);
        }
    }
    return m;
}

Imatrix read_gguf(const GgufFile& g, const std::string& path) {
    Imatrix m;
    m.datasets = g.get_string_array("imatrix.datasets");
    m.chunk_count = int32_t(g.get_uint("imatrix.chunk_count").value_or(0));
    m.chunk_size = int32_t(g.get_uint("imatrix.chunk_size").value_or(0));
    if (!g.get_uint("imatrix.chunk_count") || !g.get_uint("imatrix.chunk_size") || !g.get_string_array("imatrix.datasets").size())
        throw Error(path + ": a GGUF without the imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size keys is not an imatrix");
    for (const GgufTensor& t : g.tensors()) {
        if (!ends_with(t.name, kSums)) {
            if (!ends_with(t.name, kCounts)) throw Error(path + ": tensor '" + t.name + "' is neither <name>.in_sum2 nor <name>.counts");
            continue;
        }
        const std::string name = t.name.substr(0, t.name.size() - std::strlen(kSums));
        const GgufTensor* counts = g.find_tensor(name + kCounts);
        if (!counts) throw Error(path + ": '" + t.name + "' has no '" + name + kCounts + "'");
        if (t.type != TensorType::F32 || counts->type != TensorType::F32) throw Error(path + ": the tensors of '" + name + "' are not F32");
        const uint64_t n_mat = counts->n_elements;
        if (n_mat == 0 || t.n_elements % n_mat != 0)
            throw Error(path + ": '" + name + "' has " + std::to_string(t.n_elements) + " sums for " + std::to_string(n_mat) + " counts");
        ImatrixEntry entry;
        entry.sums.resize(t.n_elements);
        std::memcpy(entry.sums.data(), t.data, t.n_elements * 4);
        for (uint64_t j = 0; j < n_mat; ++j) {
            float c;
            std::memcpy(&c, counts->data + 4 * j, 4);
            if (!(c >= 0) || c > 9e18f) throw Error(path + ": a count of '" + name + "' is not a token count");
            entry.counts.push_back(std::lround(c));
        }
        m.entries[name] = std::move(entry);
    }
    return m;
}

}  // namespace

std::vector<float> Imatrix::importance(const std::string& name) const {
    const auto it = entries.find(name);
    if (it == entries.end()) return {};
    const ImatrixEntry& e = it->second;
    std::vector<float> out(e.sums.size());
    const size_t n_mat = e.counts.size(), cols = e.sums.size() / n_mat;
    for (size_t j = 0; j < n_mat; ++j)
        for (size_t i = 0; i < cols; ++i) {
            const float s = e.sums[j * cols + i];
            if (legacy) out[j * cols + i] = e.counts[j] > 0 ? s / float(e.counts[j]) : s;
            else out[j * cols + i] = e.counts[j] > 0 ? s / float(e.counts[j]) : 1.0f;
        }
    return out;
}

void write_imatrix_gguf(const Imatrix& m, const std::string& path) {
    GgufWriter w(path);
    w.set_string("general.type", "imatrix");
    w.set_strings("imatrix.datasets", m.datasets);
    w.set_u32("imatrix.chunk_count", uint32_t(m.chunk_count));
    w.set_u32("imatrix.chunk_size", uint32_t(m.chunk_size));
    for (const auto& [name, e] : m.entries) {
        const uint64_t n_mat = e.counts.size(), cols = e.sums.size() / n_mat;
        w.add_tensor(name + kSums, TensorType::F32, n_mat == 1 ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{cols, n_mat});
        w.add_tensor(name + kCounts, TensorType::F32, n_mat == 1 ? std::vector<uint64_t>{1} : std::vector<uint64_t>{1, n_mat});
    }
    w.begin_data();
    for (const auto& [name, e] : m.entries) {
        w.write_data({reinterpret_cast<const uint8_t*>(e.sums.data()), e.sums.size() * 4});
        std::vector<float> counts(e.counts.begin(), e.counts.end());
        w.write_data({reinterpret_cast<const uint8_t*>(counts.data()), counts.size() * 4});
    }
    w.finish();
}

void write_imatrix_legacy(const Imatrix& m, const std::string& path) {
    const std::string partial = path + ".partial";
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(partial.c_str(), "wb"), &std::fclose);
    if (!f) throw Error(path + ": cannot open for writing");
    bool ok = true;
    const auto put = [&](const void* p, size_t n) { ok = ok && std::fwrite(p, 1, n, f.get()) == n; };
    const auto put_i32 = [&](int32_t v) { put(&v, 4); };
    std::vector<const std::pair<const std::string, ImatrixEntry>*> kept;
    for (const auto& kv : m.entries)  // the legacy format cannot say "no tokens": such entries are left out, as llama.cpp does
        if (std::any_of(kv.second.counts.begin(), kv.second.counts.end(), [](int64_t c) { return c > 0; })) kept.push_back(&kv);
    put_i32(int32_t(kept.size()));
    for (const auto* kv : kept) {
        const ImatrixEntry& e = kv->second;
        const size_t n_mat = e.counts.size(), cols = e.sums.size() / n_mat;
        const int64_t most = *std::max_element(e.counts.begin(), e.counts.end());
        const int32_t ncall = m.chunk_size > 0 ? int32_t((most + m.chunk_size - 1) / m.chunk_size) : int32_t(most);
        put_i32(int32_t(kv->first.size()));
        put(kv->first.data(), kv->first.size());
        put_i32(ncall);
        put_i32(int32_t(e.sums.size()));
        std::vector<float> values(e.sums.size());
        for (size_t j = 0; j < n_mat; ++j)
            for (size_t i = 0; i < cols; ++i)
                values[j * cols + i] = e.counts[j] > 0 ? e.sums[j * cols + i] / float(e.counts[j]) * float(ncall) : float(ncall);
        put(values.data(), values.size() * 4);
    }
    put_i32(m.chunk_count);
    const std::string dataset = m.datasets.empty() ? "" : m.datasets.back();
    put_i32(int32_t(dataset.size()));
    put(dataset.data(), dataset.size());
    ok = ok && std::fflush(f.get()) == 0;
    f.reset();
    if (!ok || std::rename(partial.c_str(), path.c_str()) != 0) {
        std::remove(partial.c_str());
        throw Error(path + ": write failed");
    }
}

Imatrix read_imatrix(const std::string& path) {
    char magic[4] = {};
    {
        std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
        if (!f) throw Error(path + ": cannot open");
        if (std::fread(magic, 1, 4, f.get()) != 4) throw Error(path + ": too short to be an imatrix file");
    }
    if (std::memcmp(magic, "GGUF", 4) == 0) {
        LoadOptions options;
        options.use_mmap = false;
        return read_gguf(GgufFile::open(path, options), path);
    }
    return read_legacy(path);
}

}  // namespace rill
