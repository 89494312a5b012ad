//! Rejects JSON Schema keys that no JSON Schema draft defines, so a misspelled keyword is
//! named instead of silently ignored. (llguidance itself rejects, by name, standard
//! keywords it does not implement.) Extension keys starting with `x-` are allowed.

use serde_json::Value;

use crate::error::{ErrorKind, GrammarError};

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

/// Checks every schema object in `schema` for keys no draft defines.
pub fn check_keywords(schema: &Value) -> Result<(), GrammarError> {
    walk(schema, "#")
}

fn walk(v: &Value, path: &str) -> Result<(), GrammarError> {
    let Value::Object(map) = v else {
        return Ok(());
    };
    for (k, sub) in map {
        if !KNOWN.contains(&k.as_str()) && !k.starts_with("x-") {
            return Err(GrammarError::new(
                ErrorKind::Unsupported,
                format!(
                    "unknown JSON Schema keyword `{k}` at {path} (not in any JSON Schema \
                     draft; extension keys must start with `x-`)"
                ),
            ));
        }
        let here = format!("{path}/{k}");
        if SCHEMA_MAPS.contains(&k.as_str()) || k == "dependencies" {
            if let Value::Object(m) = sub {
                for (name, s) in m {
                    walk(s, &format!("{here}/{name}"))?;
                }
            }
        } else if SCHEMA_ONE.contains(&k.as_str()) {
            walk(sub, &here)?;
        } else if SCHEMA_LISTS.contains(&k.as_str()) || k == "items" {
            match sub {
                Value::Array(xs) => {
                    for (i, s) in xs.iter().enumerate() {
                        walk(s, &format!("{here}/{i}"))?;
                    }
                }
                other => walk(other, &here)?,
            }
        }
    }
    Ok(())
}
