//! Rejects JSON Schema keys that no JSON Schema draft defines, so a misspelled keyword is
//! named instead of silently ignored. (llguidance itself rejects, by name, standard
//! keywords it does not implement.) Extension keys starting with `x-` are allowed.

use serde_json::Value;

use crate::error::{ErrorKind, GrammarError, Location};
use crate::json_locate;

/// Every keyword of JSON Schema drafts 4 to 2020-12.
const KNOWN: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "dependencies",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "dependentSchemas",
    "unevaluatedItems",
    "unevaluatedProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// Keywords whose value is a map from names to subschemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is one subschema.
const SCHEMA_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is a list of subschemas.
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Checks every schema object in `schema` (parsed from `source`) for keys no draft
/// defines; the error names the key's JSON Pointer and its line and column in `source`.
pub fn check_keywords(schema: &Value, source: &str) -> Result<(), GrammarError> {
    let unknown = |k: &str| !KNOWN.contains(&k) && !k.starts_with("x-");
    let Some(path) = first_keyword(schema, &unknown) else {
        return Ok(());
    };
    let (key, parents) = path.split_last().expect("a keyword path is never empty");
    let pointer: String = parents
        .iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect();
    let message = format!(
        "unknown JSON Schema keyword `{key}` at #{pointer} (not in any JSON Schema draft; \
         extension keys must start with `x-`)"
    );
    let mut e = GrammarError::new(ErrorKind::Unsupported, message);
    e.location = json_locate::locate(source, &path).map(|at| Location::of_offset(source, at));
    Err(e)
}

/// Where in `source` (a JSON Schema) the first schema keyword among `keys` is, e.g. for
/// llguidance's "Unimplemented keys" errors, which name keys but no place.
pub fn keyword_location(source: &str, keys: &[String]) -> Option<Location> {
    let schema: Value = serde_json::from_str(source).ok()?;
    let path = first_keyword(&schema, &|k| keys.iter().any(|x| x == k))?;
    json_locate::locate(source, &path).map(|at| Location::of_offset(source, at))
}

/// The path (keys and indices from the root) of the first keyword of a schema object
/// for which `pick` holds, visiting subschemas only where the keywords hold them (so a
/// property *named* like a keyword is not taken for one).
fn first_keyword(schema: &Value, pick: &dyn Fn(&str) -> bool) -> Option<Vec<String>> {
    let mut path = Vec::new();
    walk(schema, &mut path, pick).then_some(path)
}

/// Depth-first search for [`first_keyword`]; on success `path` holds the found key's path.
fn walk(v: &Value, path: &mut Vec<String>, pick: &dyn Fn(&str) -> bool) -> bool {
    let Value::Object(map) = v else {
        return false;
    };
    for (k, sub) in map {
        path.push(k.clone());
        if pick(k) {
            return true;
        }
        let found = match sub {
            Value::Object(m) if SCHEMA_MAPS.contains(&k.as_str()) || k == "dependencies" => m
                .iter()
                .any(|(name, s)| walk_into(s, name.clone(), path, pick)),
            Value::Array(xs) if SCHEMA_LISTS.contains(&k.as_str()) || k == "items" => xs
                .iter()
                .enumerate()
                .any(|(i, s)| walk_into(s, i.to_string(), path, pick)),
            _ if SCHEMA_ONE.contains(&k.as_str())
                || SCHEMA_LISTS.contains(&k.as_str())
                || k == "items" =>
            {
                walk(sub, path, pick)
            }
            _ => false,
        };
        if found {
            return true;
        }
        path.pop();
    }
    false
}

/// [`walk`] into the member `segment` of the current value.
fn walk_into(
    v: &Value,
    segment: String,
    path: &mut Vec<String>,
    pick: &dyn Fn(&str) -> bool,
) -> bool {
    path.push(segment);
    let found = walk(v, path, pick);
    if !found {
        path.pop();
    }
    found
}
