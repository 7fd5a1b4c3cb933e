// Flags every model-loading subcommand shares: the file and how its bytes are brought into memory.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "runtime/format/file_bytes.h"

namespace rill::cli {

struct ModelFlags {
    std::string path;
    bool no_mmap = false;
    bool mlock = false;

    void add_to(CLI::App& cmd) {
        cmd.add_option("-m,--model", path, "GGUF model file")->required()->check(CLI::ExistingFile);
        cmd.add_flag("--no-mmap", no_mmap, "read the weights into memory instead of memory-mapping the file");
        cmd.add_flag("--mlock", mlock, "lock the weights in RAM so the OS never pages them out");
    }
    LoadOptions load_options() const {
        LoadOptions options;
        options.use_mmap = !no_mmap;
        options.lock = mlock;
        return options;
    }
};

}  // namespace rill::cli
