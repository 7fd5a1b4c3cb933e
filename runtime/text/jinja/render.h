// Renders a parsed template the way Jinja2's sandbox does: its scoping (a for loop or macro body is a
// scope; if is not; namespaces carry values out), loop variables, macros, and the builtin filters, tests
// and globals (range, namespace, dict) chat templates use.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "runtime/text/jinja/parser.h"
#include "runtime/text/jinja/value.h"

namespace rill::jinja {

// `variables` are the template's top-level names; callables among them become its functions.
// Throws rill::Error naming the template position of the failure. Unknown filters and tests are
// reported before anything renders, as Jinja does when it compiles a template.
std::string render(const Template& t, const std::vector<std::pair<std::string, Value>>& variables);

}  // namespace rill::jinja
