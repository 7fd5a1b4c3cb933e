// Python's str semantics for the template engine: code points over UTF-8, the str methods templates
// call, slice arithmetic, and int() and float() of text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rill::jinja {

// Python str semantics over UTF-8 text: lengths, indices and slices count code points; bytes that are
// not valid UTF-8 count as one code point each and come back out unchanged.
namespace py {

std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
std::size_t length(std::string_view s);
bool is_space(char32_t c);  // str.isspace()

// str.strip / lstrip / rstrip; no chars: whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / rsplit; no separator: runs of whitespace, ignoring the ends. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit,
                               bool from_right);
std::string replace(std::string_view s, std::string_view old, std::string_view replacement, std::int64_t count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()

// Python's slice arithmetic: indices of items [start:stop:step] of a sequence of `size` items.
std::vector<std::int64_t> slice_indices(std::int64_t size, std::optional<std::int64_t> start,
                                        std::optional<std::int64_t> stop, std::optional<std::int64_t> step);

// int(text) and float(text); nullopt where Python raises ValueError.
std::optional<std::int64_t> parse_int(std::string_view text);
std::optional<double> parse_float(std::string_view text);

}  // namespace py

}  // namespace rill::jinja
