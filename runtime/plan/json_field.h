// Typed fields of the planner's JSON files (machine profile, calibration), read so that a wrong file is
// a rill::Error naming the field, never the JSON library's own exception or undefined behaviour.
#pragma once
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/error.h"

namespace rill {

// nlohmann turns a float into an integer with a cast, undefined past the integer's range, so a field
// that holds integers must hold them written as integers.
template <class T>
struct holds_integers : std::is_integral<T> {};
template <class T>
struct holds_integers<std::vector<T>> : holds_integers<T> {};

inline bool has_float(const nlohmann::json& v) {
    if (v.is_number_float()) return true;
    if (v.is_array())
        for (const nlohmann::json& e : v)
            if (has_float(e)) return true;
    return false;
}

// j[key] as a T; `what` names the file in the error ("machine profile", "calibration").
template <class T>
T json_field(const nlohmann::json& j, const char* key, const char* what) {
    if (!j.is_object() || !j.contains(key)) throw Error(std::string(what) + ": missing field '" + key + "'");
    const auto wrong = [&] { return Error(std::string(what) + ": field '" + key + "' has the wrong type"); };
    if (holds_integers<T>::value && has_float(j.at(key))) throw wrong();
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
        throw wrong();
    }
}

}  // namespace rill
