// The one exception type rill throws: a message that names what is wrong, for the user to read.
#pragma once
#include <stdexcept>
#include <string>

namespace rill {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace rill
