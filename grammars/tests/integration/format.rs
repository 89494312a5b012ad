//! Format detection and choice by extension (docs/grammar-formats.md).

use grammars::Format;

#[test]
fn detects_each_format() {
    assert_eq!(Format::detect("root ::= \"a\"\n"), Format::Gbnf);
    assert_eq!(
        Format::detect("start: \"a\" b\nb: /[0-9]+/\n"),
        Format::Lark
    );
    assert_eq!(
        Format::detect("// c\n%import common.NUMBER\nstart: NUMBER\n"),
        Format::Lark
    );
    assert_eq!(
        Format::detect("{\"type\": \"integer\"}"),
        Format::JsonSchema
    );
    assert_eq!(Format::detect("  {\"properties\": {}}"), Format::JsonSchema);
    assert_eq!(Format::detect("[0-9]{4}-[0-9]{2}-[0-9]{2}"), Format::Regex);
    assert_eq!(Format::detect("(a|b)*c"), Format::Regex);
    // `::` alone is not a Lark rule, and JSON that is not a schema object is a regex.
    assert_eq!(Format::detect("a::b"), Format::Regex);
    assert_eq!(Format::detect("{\"foo\": 1}"), Format::Regex);
    // A regex with a colon is not mistaken for Lark.
    assert_eq!(Format::detect("\\d+:\\d+"), Format::Regex);
    assert_eq!(Format::detect("https?://[a-z]+"), Format::Regex);
    assert_eq!(Format::detect("key:value"), Format::Regex);
    assert_eq!(
        Format::detect("?expr: a | b\na: \"a\"\nb: \"b\"\n"),
        Format::Lark
    );
    assert_eq!(Format::detect("start:\n  | \"x\"\n"), Format::Lark);
}

#[test]
fn chooses_by_extension_and_name() {
    for (path, f) in [
        ("g.lark", Format::Lark),
        ("dir/g.gbnf", Format::Gbnf),
        ("G.EBNF", Format::Gbnf),
        ("dates.regex", Format::Regex),
        ("schema.json", Format::JsonSchema),
    ] {
        assert_eq!(Format::from_path(path), Some(f), "{path}");
    }
    assert_eq!(Format::from_path("grammar.txt"), None);
    assert_eq!(Format::from_path("noext"), None);
    assert_eq!("json-schema".parse::<Format>(), Ok(Format::JsonSchema));
    assert_eq!("GBNF".parse::<Format>(), Ok(Format::Gbnf));
    let e = "yaml".parse::<Format>().expect_err("unknown");
    assert!(e.contains("unknown grammar format `yaml`"), "{e}");
    assert_eq!(Format::JsonSchema.to_string(), "json-schema");
}
