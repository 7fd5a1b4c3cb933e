// JSON Schema to GBNF: a grammar whose every sentence is a JSON text that validates against the
// schema. Supported: type (also as a list), properties / required / additionalProperties, enum,
// const, anyOf / oneOf, allOf of one schema, $ref into the same document ($defs, definitions),
// arrays with items / prefixItems / minItems / maxItems, strings with minLength / maxLength,
// pattern (a regular-expression subset) and format date, time, date-time, uuid; integers with
// minimum / maximum (exclusive too), numbers with minimum 0.
//
// What a grammar cannot promise is refused with an Error naming the keyword and where it is
// (uniqueItems, not, if/then/else, multipleOf, patternProperties, minProperties, …). Annotations
// (title, description, default, examples, …) are ignored. Two choices narrow what JSON Schema
// allows while staying valid: properties come in the order they are declared, required ones
// first, and an object that declares properties gets no others even if additionalProperties
// permits them. oneOf is generated as anyOf: branches that overlap can produce a value matching two.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rill::grammar {

// The grammar text; its root rule is one JSON value (no leading or trailing space).
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// Several schemas in one grammar without a root: rule `name` is one JSON value valid for its schema
// (a $ref points into that schema), and the rules they draw on are written once. For a caller whose
// syntax around the values is not JSON (a call's arguments written as name=value).
std::string json_schema_rules(const std::vector<std::pair<std::string, nlohmann::ordered_json>>& named);

// Any JSON object (response_format json_object).
std::string json_object_gbnf();

// A GBNF string literal for `bytes`, quotes included.
std::string gbnf_literal(const std::string& bytes);

}  // namespace rill::grammar
