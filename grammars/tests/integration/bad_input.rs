//! Bad input gives a clear error with a kind, a position and what was expected.

use crate::common;

use common::small_compiler;
use grammars::{Compiler, ErrorKind, Format, GrammarError, Limits, Location};

fn err(src: &str, f: Format) -> GrammarError {
    match small_compiler().compile(src, Some(f)) {
        Ok(_) => panic!("{src:?} should not compile"),
        Err(e) => e,
    }
}

fn at(line: usize, column: usize) -> Option<Location> {
    Some(Location { line, column })
}

#[test]
fn gbnf_syntax_error_names_line_column_and_expectation() {
    let e = err("root ::= \"a\" item\nitem ::= [a-z\n", Format::Gbnf);
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(e.location, at(2, 14));
    assert!(e.message.contains("expected `]`"), "{e}");
    let e = e.in_file("g.gbnf");
    assert_eq!(
        e.to_string(),
        "g.gbnf:2:14: expected `]` to close the character class, found end of line"
    );
}

#[test]
fn gbnf_missing_assignment() {
    let e = err("root ::= x\nx = \"a\"\n", Format::Gbnf);
    assert_eq!((e.kind, e.location), (ErrorKind::Syntax, at(2, 3)));
    assert!(e.message.contains("expected `::=`"), "{e}");
}

#[test]
fn gbnf_unclosed_group_and_string() {
    let e = err("root ::= (\"a\" | \"b\"\n", Format::Gbnf);
    assert_eq!(e.location, at(2, 1));
    assert!(e.message.contains("`)`"), "{e}");
    let e = err("root ::= \"abc\n", Format::Gbnf);
    assert_eq!(e.location, at(1, 14));
    assert!(e.message.contains("`\"` to close the string"), "{e}");
}

#[test]
fn gbnf_bad_escape_and_range() {
    let e = err("root ::= \"\\q\"\n", Format::Gbnf);
    assert_eq!((e.kind, e.location), (ErrorKind::Syntax, at(1, 11)));
    assert!(e.message.contains("unknown escape `\\q`"), "{e}");
    let e = err("root ::= [z-a]\n", Format::Gbnf);
    assert!(e.message.contains("ends before it starts"), "{e}");
    let e = err("root ::= \"a\"{3,1}\n", Format::Gbnf);
    assert!(e.message.contains("maximum below its minimum"), "{e}");
}

#[test]
fn gbnf_undefined_rule() {
    let e = err(
        "root ::= greeting \" \" name\ngreeting ::= \"hi\"\n",
        Format::Gbnf,
    );
    assert_eq!(e.kind, ErrorKind::UndefinedRule);
    assert_eq!(e.location, at(1, 23));
    assert_eq!(e.message, "undefined rule `name`");
}

#[test]
fn gbnf_missing_root_and_duplicate_rule() {
    let e = err("start ::= \"a\"\n", Format::Gbnf);
    assert_eq!(e.kind, ErrorKind::UndefinedRule);
    assert!(e.message.contains("no `root` rule"), "{e}");
    let e = err("root ::= \"a\"\nroot ::= \"b\"\n", Format::Gbnf);
    assert_eq!(e.location, at(2, 1));
    assert!(
        e.message
            .contains("defined twice (first at line 1, column 1)"),
        "{e}"
    );
}

#[test]
fn gbnf_empty_language_is_detected() {
    // Every alternative of `root` needs another `root`: no finite string.
    let e = err(
        "root ::= \"(\" root \")\" | \"[\" loop\nloop ::= loop \"x\"\n",
        Format::Gbnf,
    );
    assert_eq!(e.kind, ErrorKind::EmptyLanguage);
    assert!(e.message.contains("matches no string"), "{e}");
    // An empty class can never match; `[^\x00-\U0010FFFF]` neither.
    let e = err("root ::= []\n", Format::Gbnf);
    assert_eq!(e.kind, ErrorKind::EmptyLanguage);
    let e = err("root ::= [^\\x00-\\U0010FFFF]\n", Format::Gbnf);
    assert_eq!(e.kind, ErrorKind::EmptyLanguage);
}

#[test]
fn lark_empty_language_is_detected() {
    // llguidance compiles it; our first-mask check finds that nothing can start it.
    let e = err("start: /[a&&b]/\n", Format::Lark);
    assert_eq!(e.kind, ErrorKind::EmptyLanguage, "{e}");
    assert!(e.message.contains("matches no string"), "{e}");
}

#[test]
fn left_recursion_is_supported() {
    // llama.cpp rejects left recursion; llguidance's Earley parser handles it, so both
    // our GBNF translation and Lark accept it and the language is right.
    for (src, f) in [
        (
            "root ::= expr\nexpr ::= expr \"+\" num | num\nnum ::= [0-9]+\n",
            Format::Gbnf,
        ),
        (
            "start: expr\nexpr: expr \"+\" NUM | NUM\nNUM: /[0-9]+/\n",
            Format::Lark,
        ),
    ] {
        let c = small_compiler()
            .compile(src, Some(f))
            .expect("left recursion compiles");
        for ok in ["1", "1+2", "10+20+30"] {
            assert!(common::small_accepts(&c, ok), "{f}: {ok}");
        }
        for bad in ["", "+1", "1+", "1++2"] {
            assert!(!common::small_accepts(&c, bad), "{f}: {bad}");
        }
    }
}

#[test]
fn lark_errors_carry_line_and_column() {
    let e = err("start: \"a\"\nfoo bar baz\n", Format::Lark);
    assert_eq!((e.kind, e.location), (ErrorKind::Syntax, at(2, 5)));
    assert!(e.message.contains("Expected token ':'"), "{e}");
    let e = err("start: \"a\" x\n", Format::Lark);
    assert_eq!((e.kind, e.location), (ErrorKind::UndefinedRule, at(1, 12)));
    assert_eq!(
        e.message, "unknown name: \"x\"",
        "llguidance's own position is left out"
    );
}

/// An unknown name is pointed at where it is used (llguidance points at the start of the
/// rule's body), past strings, regexes, comments and `->` aliases that spell it.
#[test]
fn an_unknown_name_is_found_where_it_is_used() {
    for (src, line, column) in [
        ("start: a\na: \"x\"\n  | \"y\"\n  | \"z\" qq\n", 4, 9),
        ("start: \"a\" \"b\" \"c\" x\n", 1, 20),
        ("start: \"a\"\n     | \"b\" zz\n", 2, 12),
        ("start: \"zz\" /zz/ // zz\n     | zz\n", 2, 8),
        ("start: \"a\" -> qq\n     | \"b\" qq\n", 2, 12),
    ] {
        let e = err(src, Format::Lark);
        assert_eq!(e.kind, ErrorKind::UndefinedRule, "{src:?}: {e}");
        assert_eq!(e.location, at(line, column), "{src:?}: {e}");
    }
}

/// Columns count characters, as in every other format (llguidance counts bytes), and a
/// message on several lines keeps its reason (the regex crate's `error: …` line).
#[test]
fn columns_count_characters_and_reasons_survive() {
    let e = err("start: \"ééé\" (\n", Format::Lark);
    assert_eq!(e.location, at(1, 15), "{e}");
    let e = err("start: /a(/\n", Format::Lark);
    assert!(e.message.contains("unclosed group"), "{e}");
    let e = err(r#"{"type": "string", "pattern": "a("}"#, Format::JsonSchema);
    assert!(e.message.contains("unclosed group"), "{e}");
    let e = err(r#"{"éé": x}"#, Format::JsonSchema);
    assert_eq!(e.location, at(1, 8), "{e}");
    let e = err("", Format::JsonSchema);
    assert_eq!(e.location, at(1, 1), "{e}");
}

#[test]
fn unsupported_json_schema_keywords_are_named() {
    // A standard keyword llguidance does not implement.
    let e = err(
        r#"{"type": "array", "items": {"type": "integer"}, "uniqueItems": true}"#,
        Format::JsonSchema,
    );
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("uniqueItems"), "{e}");
    assert_eq!(e.location, at(1, 49), "{e}");
    // A property merely *named* like the keyword is not where the fault is.
    let e = err(
        "{\"properties\": {\"uniqueItems\": {}},\n \"uniqueItems\": true}",
        Format::JsonSchema,
    );
    assert_eq!(e.location, at(2, 2), "{e}");
    // A key no draft defines (a typo) is named with its path, not ignored.
    let e = err(
        r#"{"type": "object", "properties": {"x": {"type": "integer", "minimun": 3}}}"#,
        Format::JsonSchema,
    );
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("`minimun` at #/properties/x"), "{e}");
    assert_eq!(e.location, at(1, 60), "{e}");
    // Across lines, inside arrays, past strings holding brackets and a same-named key.
    let src = "{\"anyOf\": [\n  {\"const\": \"]}\", \"minimun\": 1},\n  {\"type\": \"integer\",\n   \"minimun\": 3}]}";
    let e = err(src, Format::JsonSchema);
    assert!(e.message.contains("`minimun` at #/anyOf/0"), "{e}");
    assert_eq!(e.location, at(2, 19), "{e}");
    // Unknown string formats are named too.
    let e = err(
        r#"{"type": "string", "format": "bogus"}"#,
        Format::JsonSchema,
    );
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("bogus"), "{e}");
}

#[test]
fn invalid_json_has_a_position() {
    let e = err(
        "{\"type\": \"object\",\n \"properties\": }",
        Format::JsonSchema,
    );
    assert_eq!((e.kind, e.location), (ErrorKind::Syntax, at(2, 16)));
}

#[test]
fn too_large_grammars_name_the_limit_and_the_size() {
    let small = Limits {
        max_source_bytes: 64,
        ..Limits::default()
    };
    let c = Compiler::with_limits(common::small_vocab(), small).expect("compiler");
    let src = format!("root ::= \"{}\"\n", "a".repeat(100));
    let e = c.compile(&src, Some(Format::Gbnf)).expect_err("too large");
    assert_eq!(e.kind, ErrorKind::TooLarge);
    assert!(
        e.message.contains("112 bytes") && e.message.contains("64 bytes"),
        "{e}"
    );

    let few_symbols = Limits {
        max_grammar_symbols: 50,
        ..Limits::default()
    };
    let c = Compiler::with_limits(common::small_vocab(), few_symbols).expect("compiler");
    let e = c
        .compile(&src, Some(Format::Gbnf))
        .expect_err("too many symbols");
    assert_eq!(e.kind, ErrorKind::TooLarge, "{e}");
    assert!(e.message.contains("limit for this grammar: 50"), "{e}");

    // Under the source limit but over llguidance's 2^16 symbols: said so, not "panic: …".
    let wide = format!("root ::= {}\n", ["(\"a\" | \"b\")"; 80_000].join(" "));
    let e = err(&wide, Format::Gbnf);
    assert_eq!(e.kind, ErrorKind::TooLarge, "{e}");
    assert!(e.message.contains("65 525 symbols"), "{e}");

    let e = err("root ::= \"a\"{0,20000}\n", Format::Gbnf);
    assert_eq!((e.kind, e.location), (ErrorKind::TooLarge, at(1, 16)));
}

#[test]
fn regexes_are_sent_to_sampler_core() {
    let e = err("[0-9]{4}-[0-9]{2}", Format::Regex);
    assert_eq!(e.kind, ErrorKind::WrongFormat);
    assert!(e.message.contains("sampler-core"), "{e}");
}

#[test]
fn file_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("grammars-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bad.gbnf");
    std::fs::write(&path, "root ::= \"a\"\n\nitem ::= (\"b\"\n").expect("write");
    let e = small_compiler()
        .compile_file(&path, None)
        .expect_err("syntax error");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:4:1: expected `)`", path.display())),
        "{shown}"
    );
    // The extension decides the format even when the text would be detected otherwise.
    let path = dir.join("ok.gbnf");
    std::fs::write(&path, "root ::= \"a\"\n").expect("write");
    assert!(small_compiler().compile_file(&path, None).is_ok());
    let e = small_compiler()
        .compile_file(&dir.join("missing.lark"), None)
        .expect_err("missing");
    assert!(
        e.to_string()
            .contains("missing.lark: cannot read the grammar"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mask_over_its_work_limit_is_an_error_not_a_smaller_mask() {
    let tight = Limits {
        max_items_per_mask: 10,
        ..Limits::default()
    };
    let c = Compiler::with_limits(common::real_vocab(), tight).expect("compiler");
    // Compiling computes the first mask, which already needs more than 10 items.
    let e = c
        .compile("root ::= [a-z]+ (\" \" [a-z]+)*\n", Some(Format::Gbnf))
        .expect_err("over the item limit");
    assert_eq!(e.kind, ErrorKind::TooLarge);
    assert!(e.message.contains("Too many items"), "{e}");
}

#[test]
fn deeply_nested_gbnf_is_refused_at_its_location_not_a_stack_overflow() {
    let compiles = |src: &str| small_compiler().compile(src, Some(Format::Gbnf)).is_ok();
    let refused_at = |src: &str, column: usize| {
        let e = err(src, Format::Gbnf);
        assert_eq!(
            (e.kind, e.location),
            (ErrorKind::TooLarge, at(1, column)),
            "{e}"
        );
        assert!(e.message.contains("nested deeper than 28"), "{e}");
    };
    // 28 groups are fine; the 29th is refused where it opens. 60 000 of them (a 120 KB
    // source) would overflow the stack of the recursive passes if parsing let them through.
    let nested = |n: usize| format!("root ::= {}\"a\"{}\n", "(".repeat(n), ")".repeat(n));
    assert!(compiles(&nested(28)));
    refused_at(&nested(29), 38);
    refused_at(&nested(60_000), 38);
    // Stacked postfix operators nest too: `"a"????…`, and inside groups they add up.
    refused_at(&format!("root ::= \"a\"{}\n", "?".repeat(60_000)), 41);
    let inside = |n: usize| format!("root ::= {}\"a\"*{}\n", "(".repeat(n), ")".repeat(n));
    assert!(compiles(&inside(27)));
    refused_at(&inside(28), 41);
    // Whatever the nesting is made of, what the parser lets through llguidance takes: the
    // translation to Lark nests no deeper than the source (fuzzing found alternations of
    // sequences and stacked stars that did, refused by llguidance as too deeply nested).
    let stars = format!("root ::= \"a\"{}\n", "*".repeat(28));
    assert!(compiles(&stars), "{stars}");
    let mut alternations = "\"z\"".to_string();
    for _ in 0..28 {
        alternations = format!("(\"a\" | \"b\" {alternations})");
    }
    let alternations = format!("root ::= {alternations}\n");
    assert!(compiles(&alternations), "{alternations}");
    let mut mixed = "\"z\"".to_string();
    for i in 0..14 {
        mixed = if i % 2 == 0 {
            format!("(\"a\" | \"b\" {mixed})")
        } else {
            format!("\"c\" {mixed}*")
        };
    }
    let mixed = format!("root ::= {mixed} | \"d\" \"e\"\n");
    assert!(compiles(&mixed), "{mixed}");
    // Siblings do not add up: many groups side by side, each shallow, are fine.
    assert!(compiles(&format!(
        "root ::= {}\n",
        "(\"a\")? ".repeat(2_000)
    )));
}

/// A mask over its work limit in the middle of a run (compiling passed) ends the run and
/// the enumeration with llguidance's message, not with a dead end or a shorter list.
#[test]
fn a_mask_error_mid_run_ends_the_run_with_it() {
    use sampler_core::exact::{EnumerateError, Limits as EnumLimits, enumerate};
    use sampler_core::samplers::{Io, Method, Params, Sampler};
    use sampler_core::toy::FnLm;
    use sampler_core::{NullSink, SampleError, SeededRng, block_on};

    let v = common::real_vocab();
    let tight = Limits {
        max_items_per_mask: 50,
        ..Limits::default()
    };
    let c = Compiler::with_limits(v, tight).expect("compiler");
    // The first mask (only `x…` tokens) fits in 50 items; the one after `x` does not.
    let cfg = c
        .compile(
            "root ::= \"x\" [a-z]+ (\" \" [a-z]+)*\n",
            Some(Format::Gbnf),
        )
        .expect("the first mask fits");
    let x = (0..v.len() as u32)
        .find(|&t| v.bytes(t) == b"x")
        .expect("token x");
    let (n, eos) = (v.len(), v.eos());
    // A model that always says `x` first, then anything.
    let mut lm = FnLm::new(n, eos, move |prefix: &[u32]| {
        let mut p = vec![1.0 / n as f64; n];
        if prefix.is_empty() {
            p.iter_mut().for_each(|q| *q = 0.0);
            p[x as usize] = 1.0;
        }
        p
    });
    // Token masking and SMC with masks need the full mask (lazy checks, as AWRS and CARS
    // make, do not: they never meet the limit here).
    for method in [Method::Lcd, Method::SmcGcd] {
        let r = block_on(
            Sampler::new(method)
                .params(&Params::default())
                .vocabulary(Some(v))
                .run(
                    &mut lm,
                    &cfg,
                    Io {
                        rng: &mut SeededRng::new(1),
                        sink: &mut NullSink,
                        out: &mut |s| panic!("{method}: no sample expected, got {s:?}"),
                    },
                ),
        );
        match r {
            Err(SampleError::Constraint(m)) => assert!(m.contains("Too many items"), "{m}"),
            other => panic!("{method}: {other:?}"),
        }
        assert!(cfg.take_error().is_none(), "the run took the error");
    }
    let limits = EnumLimits {
        max_tokens: 8,
        max_sequences: 100,
    };
    match block_on(enumerate(&mut lm, &cfg, limits)) {
        Err(EnumerateError::Constraint(m)) => assert!(m.contains("Too many items"), "{m}"),
        other => panic!("enumerate: {other:?}"),
    }
}

/// Lark and JSON Schema nested far deeper than any real grammar are refused with an error,
/// not a stack overflow in a recursive pass (ours or llguidance's).
#[test]
fn deeply_nested_lark_and_json_schema_are_refused_not_a_stack_overflow() {
    let lark = format!("start: {}\"a\"{}\n", "(".repeat(60_000), ")".repeat(60_000));
    let e = err(&lark, Format::Lark);
    assert!(e.message.contains("too deeply nested"), "{e}");
    assert_eq!(e.location.map(|l| l.line), Some(1), "{e}");
    let schema = |n: usize| {
        format!(
            "{}{{\"type\": \"integer\"}}{}",
            "{\"type\": \"array\", \"items\": ".repeat(n),
            "}".repeat(n)
        )
    };
    // JSON's own nesting limit (128 levels) refuses it at its position, before any pass.
    let e = err(&schema(10_000), Format::JsonSchema);
    assert!(e.message.contains("recursion limit exceeded"), "{e}");
    assert_eq!(e.location.map(|l| l.line), Some(1), "{e}");
    // Just under that limit the schema compiles (or is refused) without overflowing.
    let _ = small_compiler().compile(&schema(60), Some(Format::JsonSchema));
}
