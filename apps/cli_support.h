// Small things several subcommands need: reading a whole file, Ctrl-C as a flag, and listing names.
#pragma once
#include <atomic>
#include <string>
#include <vector>

namespace rill::cli {

// The file's bytes; throws rill::Error naming the file if it cannot be read.
std::string read_text_file(const std::string& path);
// A text to score (perplexity, imatrix): the file with one trailing newline dropped, as llama.cpp reads it.
std::string read_scoring_text(const std::string& path);

// Installs a SIGINT (and SIGTERM, if asked) handler that only sets the returned flag, with no
// SA_RESTART, so a blocked read returns and long work can stop at its next check.
const std::atomic<bool>& interrupt_flag(bool also_sigterm = false);
void clear_interrupt();
bool take_interrupt();  // reads and clears

std::string join_names(const std::vector<std::string>& names);

}  // namespace rill::cli
