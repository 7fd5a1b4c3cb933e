// Quantization mixes: the type each tensor gets matches what llama.cpp chose for the golden files.
#include "catch.h"

#include <nlohmann/json.hpp>

#include "runtime/make/quant_mix.h"
#include "shared_data.h"

using namespace rill;

TEST_CASE("the K-quant mixes give every golden tensor the type llama.cpp gave it", "[quant_mix]") {
    const GgufFile source = GgufFile::open(test::shared_path("golden/synth-llama-A.F32.gguf"));
    for (const char* mix : {"Q4_K_M", "Q5_K_M", "Q3_K_M"}) {
        INFO(mix);
        const auto golden = nlohmann::json::parse(test::read_text(test::shared_path(std::string("golden/synth-llama-A.") + mix + ".golden.json")));
        QuantMix chooser = QuantMix::for_file(*find_recipe(mix), source, false);
        for (const GgufTensor& t : source.tensors()) {
            INFO(t.name);
            CHECK(std::string(traits(chooser.choose(t)).name) == golden["tensor_types"][t.name].get<std::string>());
        }
    }
}

TEST_CASE("a pure quantization gives every matrix the one type and leaves norms in F32", "[quant_mix]") {
    const GgufFile source = GgufFile::open(test::shared_path("golden/synth-llama-A.F32.gguf"));
    QuantMix chooser = QuantMix::for_file(*find_recipe("Q4_0"), source, true);
    for (const GgufTensor& t : source.tensors()) {
        INFO(t.name);
        CHECK(chooser.choose(t) == (t.n_dims == 2 ? TensorType::Q4_0 : TensorType::F32));
    }
}

TEST_CASE("MXFP4_MOE gives experts MXFP4, every other matrix Q8_0 and leaves routers and norms as they were, as llama.cpp does", "[quant_mix][moe]") {
    const GgufFile source = GgufFile::open(test::shared_path("arch/qwen3moe-A.gguf"));
    QuantMix chooser = QuantMix::for_file(*find_recipe("MXFP4_MOE"), source, false);
    size_t experts = 0, routers = 0;
    for (const GgufTensor& t : source.tensors()) {
        INFO(t.name);
        const bool expert = t.name.find("_exps.weight") != std::string::npos, router = t.name.find("ffn_gate_inp.weight") != std::string::npos;
        experts += expert;
        routers += router;
        const TensorType want = expert ? TensorType::MXFP4 : router || t.n_dims < 2 || t.name.find("_norm.weight") != std::string::npos ? t.type : TensorType::Q8_0;
        CHECK(chooser.choose(t) == want);
    }
    CHECK(experts > 0);
    CHECK(routers > 0);
}

TEST_CASE("a mixture's router keeps its type in every mix", "[quant_mix][moe]") {
    const GgufFile source = GgufFile::open(test::shared_path("arch/qwen3moe-A.gguf"));
    for (const char* mix : {"Q4_K_M", "Q8_0", "Q2_K"}) {
        QuantMix chooser = QuantMix::for_file(*find_recipe(mix), source, false);
        for (const GgufTensor& t : source.tensors())
            if (t.name.find("ffn_gate_inp.weight") != std::string::npos) CHECK(chooser.choose(t) == t.type);
    }
}

TEST_CASE("an unknown quantization name is not found", "[quant_mix]") {
    CHECK_FALSE(find_recipe("Q7_K").has_value());
    CHECK(find_recipe("Q4_K_M")->file_type == 15);
}
