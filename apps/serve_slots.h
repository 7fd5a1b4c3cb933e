// A server slot's context in a file (/slots?action=save|restore): the tokens it holds, then the
// session's state (keys, values, position, last logits). A restored slot reuses its prefix for the
// next request that shares it, as if it had evaluated those tokens itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session/session.h"

namespace rill::serve {

// Writes atomically (a temporary file renamed into place); returns the bytes written.
size_t save_slot_file(const std::string& path, const std::vector<int32_t>& tokens, const Session& session);
// Reads a file save_slot_file wrote into `session` and returns its tokens; throws rill::Error naming
// what is wrong (not a slot file, another model or KV type, a truncated file). On error the session
// is reset. `bytes_read` gets the file's size.
std::vector<int32_t> load_slot_file(const std::string& path, Session& session, size_t& bytes_read);

}  // namespace rill::serve
