#include "runtime/text/jinja/py_str.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "runtime/text/jinja/value.h"  // Failure and the size bound

namespace rill::jinja {

namespace py {

namespace {

constexpr char32_t kEscapedByte = 0xdc00;  // + the byte: how an invalid byte decodes (surrogateescape)

bool continuation(unsigned char b, unsigned char lo = 0x80, unsigned char hi = 0xbf) { return b >= lo && b <= hi; }

char32_t decode_one(std::string_view s, std::size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const std::size_t left = s.size() - i;
    auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    if (b0 >= 0xc2 && b0 <= 0xdf && left >= 2 && continuation(at(1))) {
        const char32_t c = (char32_t(b0 & 0x1f) << 6) | (at(1) & 0x3f);
        i += 2;
        return c;
    }
    if (b0 >= 0xe0 && b0 <= 0xef && left >= 3) {
        const unsigned char lo = b0 == 0xe0 ? 0xa0 : 0x80, hi = b0 == 0xed ? 0x9f : 0xbf;
        if (continuation(at(1), lo, hi) && continuation(at(2))) {
            const char32_t c = (char32_t(b0 & 0x0f) << 12) | (char32_t(at(1) & 0x3f) << 6) | (at(2) & 0x3f);
            i += 3;
            return c;
        }
    }
    if (b0 >= 0xf0 && b0 <= 0xf4 && left >= 4) {
        const unsigned char lo = b0 == 0xf0 ? 0x90 : 0x80, hi = b0 == 0xf4 ? 0x8f : 0xbf;
        if (continuation(at(1), lo, hi) && continuation(at(2)) && continuation(at(3))) {
            const char32_t c = (char32_t(b0 & 0x07) << 18) | (char32_t(at(1) & 0x3f) << 12) |
                               (char32_t(at(2) & 0x3f) << 6) | (at(3) & 0x3f);
            i += 4;
            return c;
        }
    }
    ++i;
    return kEscapedByte + b0;
}

void encode_one(std::string& out, char32_t c) {
    if (c >= kEscapedByte + 0x80 && c <= kEscapedByte + 0xff) {
        out += static_cast<char>(c - kEscapedByte);
        return;
    }
    if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff) c = 0xfffd;
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xc0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xe0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    }
}

// Simple case pairs: Latin (ASCII, Latin-1, Latin Extended-A), Greek, Cyrillic and fullwidth Latin.
// Scripts beyond these keep their case; that is a deliberate bound on the table, not Python's full one.
char32_t upper_of(char32_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
    if (c == 0xff) return 0x178;
    if (c == 0xb5) return 0x39c;
    if (c == 0x131) return 'I';
    if (c == 0x17f) return 'S';
    if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return (c & 1) ? c - 1 : c;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c & 1) ? c : c - 1;
    if (c >= 0x3b1 && c <= 0x3c9) return c == 0x3c2 ? 0x3a3 : c - 32;
    if (c == 0x3ac) return 0x386;
    if (c >= 0x3ad && c <= 0x3af) return c - 37;
    if (c == 0x3cc) return 0x38c;
    if (c == 0x3cd || c == 0x3ce) return c - 63;
    if (c >= 0x430 && c <= 0x44f) return c - 32;
    if (c >= 0x450 && c <= 0x45f) return c - 80;
    if (c >= 0xff41 && c <= 0xff5a) return c - 32;
    return c;
}

char32_t lower_of(char32_t c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7)) return c + 32;
    if (c == 0x178) return 0xff;
    if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return (c & 1) ? c : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c & 1) ? c + 1 : c;
    if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
    if (c == 0x386) return 0x3ac;
    if (c >= 0x388 && c <= 0x38a) return c + 37;
    if (c == 0x38c) return 0x3cc;
    if (c == 0x38e || c == 0x38f) return c + 63;
    if (c >= 0x410 && c <= 0x42f) return c + 32;
    if (c >= 0x400 && c <= 0x40f) return c + 80;
    if (c >= 0xff21 && c <= 0xff3a) return c + 32;
    return c;
}

bool cased(char32_t c) { return upper_of(c) != c || lower_of(c) != c || c == 0xdf || c == 0x138 || c == 0x149; }

void append_upper(std::string& out, char32_t c) {
    if (c == 0xdf) {
        out += "SS";
        return;
    }
    encode_one(out, upper_of(c));
}

// Title case for str.title() and str.capitalize(): ß becomes "Ss".
void append_title(std::string& out, char32_t c) {
    if (c == 0xdf) {
        out += "Ss";
        return;
    }
    encode_one(out, upper_of(c));
}

std::u32string chars_of(const std::optional<std::string>& chars) { return chars ? decode(*chars) : std::u32string(); }

}  // namespace

std::u32string decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) out += decode_one(s, i);
    return out;
}

std::string encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) encode_one(out, c);
    return out;
}

std::size_t length(std::string_view s) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.size(); ++n) decode_one(s, i);
    return n;
}

bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    const std::u32string set = chars_of(chars);
    auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
    const std::u32string text = decode(s);
    std::size_t begin = 0, end = text.size();
    if (left)
        while (begin < end && strippable(text[begin])) ++begin;
    if (right)
        while (end > begin && strippable(text[end - 1])) --end;
    return encode(std::u32string_view(text).substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit,
                               bool from_right) {
    std::vector<std::string> parts;
    if (sep) {
        if (sep->empty()) throw Failure("empty separator");
        // Byte search is exact on UTF-8: a code point's bytes never match inside another's.
        if (!from_right) {
            std::size_t start = 0;
            for (std::size_t at; (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) &&
                                 (at = s.find(*sep, start)) != std::string_view::npos;) {
                parts.emplace_back(s.substr(start, at - start));
                start = at + sep->size();
            }
            parts.emplace_back(s.substr(start));
        } else {
            std::size_t end = s.size();
            for (std::size_t at; (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) &&
                                 end >= sep->size() &&
                                 (at = s.rfind(*sep, end - sep->size())) != std::string_view::npos;) {
                parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
                end = at;
            }
            parts.emplace_back(s.substr(0, end));
            std::reverse(parts.begin(), parts.end());
        }
        return parts;
    }
    // Splitting from the right is splitting the reversed text from the left.
    std::u32string text = decode(s);
    if (from_right) std::reverse(text.begin(), text.end());
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (true) {
        while (i < n && is_space(text[i])) ++i;
        if (i == n) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
            // The rest stays whole, its far end untrimmed, as Python leaves it.
            std::u32string rest = text.substr(i);
            if (from_right) std::reverse(rest.begin(), rest.end());
            parts.push_back(encode(rest));
            break;
        }
        const std::size_t start = i;
        while (i < n && !is_space(text[i])) ++i;
        std::u32string word = text.substr(start, i - start);
        if (from_right) std::reverse(word.begin(), word.end());
        parts.push_back(encode(word));
    }
    if (from_right) std::reverse(parts.begin(), parts.end());
    return parts;
}

std::string replace(std::string_view s, std::string_view old, std::string_view replacement, std::int64_t count) {
    // Size the result before building it, so a huge replacement fails instead of exhausting memory.
    std::size_t hits = 0;
    if (old.empty()) {
        hits = length(s) + 1;
    } else {
        for (std::size_t at = s.find(old); at != std::string_view::npos; at = s.find(old, at + old.size())) ++hits;
    }
    if (count >= 0) hits = std::min(hits, static_cast<std::size_t>(count));
    const long double size = static_cast<long double>(s.size()) +
                             static_cast<long double>(hits) *
                                 (static_cast<long double>(replacement.size()) - static_cast<long double>(old.size()));
    if (size > static_cast<long double>(kMaxBytes))
        throw Failure("a string longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
    std::string out;
    out.reserve(static_cast<std::size_t>(size));
    if (old.empty()) {
        std::size_t i = 0, done = 0;
        while (true) {
            if (done < hits) {
                out += replacement;
                ++done;
            }
            if (i >= s.size()) break;
            const std::size_t start = i;
            decode_one(s, i);
            out += s.substr(start, i - start);
        }
        return out;
    }
    std::size_t start = 0, done = 0;
    for (std::size_t at; done < hits && (at = s.find(old, start)) != std::string_view::npos; ++done) {
        out += s.substr(start, at - start);
        out += replacement;
        start = at + old.size();
    }
    out += s.substr(start);
    return out;
}

std::string upper(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) append_upper(out, decode_one(s, i));
    return out;
}

std::string lower(std::string_view s) {
    const std::u32string text = decode(s);
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char32_t c = text[i];
        // Python lowers a capital sigma that ends a word to the final form.
        if (c == 0x3a3 && i > 0 && cased(text[i - 1]) && (i + 1 == text.size() || !cased(text[i + 1])))
            c = 0x3c2;
        else
            c = lower_of(c);
        encode_one(out, c);
    }
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (std::size_t i = 0; i < s.size();) {
        const char32_t c = decode_one(s, i);
        if (previous_cased)
            encode_one(out, lower_of(c));
        else
            append_title(out, c);
        previous_cased = cased(c);
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        const bool first = i == 0;
        const char32_t c = decode_one(s, i);
        if (first)
            append_title(out, c);
        else
            encode_one(out, lower_of(c));
    }
    return out;
}

std::vector<std::int64_t> slice_indices(std::int64_t size, std::optional<std::int64_t> start,
                                        std::optional<std::int64_t> stop, std::optional<std::int64_t> step) {
    const std::int64_t st = step.value_or(1);
    if (st == 0) throw Failure("slice step cannot be zero");
    const std::int64_t lower = st > 0 ? 0 : -1, upper = st > 0 ? size : size - 1;
    auto clamp = [&](std::optional<std::int64_t> index, std::int64_t fallback) {
        if (!index) return fallback;
        std::int64_t i = *index;
        if (i < 0) i = i < -size ? lower : std::max(i + size, lower);
        else i = std::min(i, upper);
        return i;
    };
    const std::int64_t from = clamp(start, st > 0 ? 0 : size - 1);
    const std::int64_t to = clamp(stop, st > 0 ? size : -1);
    std::vector<std::int64_t> out;
    if (st > 0) {
        for (std::int64_t i = from; i < to; i += st) {
            out.push_back(i);
            if (to - i <= st) break;
        }
    } else {
        for (std::int64_t i = from; i > to; i += st) {
            out.push_back(i);
            if (i - to <= -st) break;
        }
    }
    return out;
}

namespace {

// Digits with single underscores between them, as Python's int() and float() accept.
bool strip_underscores(std::string_view digits, std::string& out) {
    if (digits.empty() || digits.front() == '_' || digits.back() == '_') return false;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (digits[i] == '_') {
            if (digits[i + 1] == '_') return false;
            continue;
        }
        out += digits[i];
    }
    return true;
}

std::string_view trim_space(std::string_view text) {
    std::size_t lead = 0;
    while (lead < text.size()) {
        std::size_t next = lead;
        if (!is_space(decode_one(text, next))) break;
        lead = next;
    }
    text.remove_prefix(lead);
    while (!text.empty()) {
        std::size_t start = text.size() - 1;
        while (start > 0 && text.size() - start < 4 && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
        std::size_t next = start;
        if (!is_space(decode_one(text, next)) || next != text.size()) break;
        text.remove_suffix(text.size() - start);
    }
    return text;
}

}  // namespace

std::optional<std::int64_t> parse_int(std::string_view text) {
    text = trim_space(text);
    bool negative = false;
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        text.remove_prefix(1);
    }
    std::string digits;
    if (!strip_underscores(text, digits)) return std::nullopt;
    for (char c : digits)
        if (c < '0' || c > '9') return std::nullopt;
    if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos) return std::nullopt;
    std::uint64_t magnitude = 0;
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    if (res.ec != std::errc() || magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)
        return std::nullopt;
    if (negative) return static_cast<std::int64_t>(0 - magnitude);
    if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(magnitude);
}

std::optional<double> parse_float(std::string_view text) {
    text = trim_space(text);
    bool negative = false;
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        text.remove_prefix(1);
    }
    std::string word;
    for (char c : text) word += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    double value = 0;
    if (word == "inf" || word == "infinity") {
        value = std::numeric_limits<double>::infinity();
    } else if (word == "nan") {
        value = std::numeric_limits<double>::quiet_NaN();
    } else {
        // [digits][.digits][e[sign]digits], each digit run with optional single underscores.
        std::string clean;
        std::size_t i = 0;
        auto run = [&](std::string& into) {
            const std::size_t start = i;
            while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '_')) ++i;
            if (i == start) return true;
            return strip_underscores(text.substr(start, i - start), into);
        };
        std::string mantissa;
        if (!run(mantissa)) return std::nullopt;
        bool any = !mantissa.empty();
        if (i < text.size() && text[i] == '.') {
            ++i;
            mantissa += '.';
            const std::size_t before = mantissa.size();
            if (!run(mantissa)) return std::nullopt;
            any = any || mantissa.size() > before;
        }
        if (!any) return std::nullopt;
        clean = mantissa;
        if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
            ++i;
            clean += 'e';
            if (i < text.size() && (text[i] == '+' || text[i] == '-')) clean += text[i++];
            std::string exponent;
            if (!run(exponent) || exponent.empty()) return std::nullopt;
            clean += exponent;
        }
        if (i != text.size()) return std::nullopt;
        const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), value);
        if (res.ec == std::errc::result_out_of_range) {
            // from_chars reports overflow and underflow alike; Python gives inf or 0.
            value = clean.find("e-") != std::string::npos ? 0.0 : std::numeric_limits<double>::infinity();
        } else if (res.ec != std::errc() || res.ptr != clean.data() + clean.size()) {
            return std::nullopt;
        }
    }
    return negative ? -value : value;
}

}  // namespace py

}  // namespace rill::jinja
