//! Each GBNF construct means what llama.cpp's documentation says, checked by accepted and
//! rejected strings on both vocabularies.

use crate::common;

use common::check_language;
use grammars::Format::Gbnf;

#[test]
fn repetition_counts() {
    check_language(
        "root ::= \"a\"{2,3} \"b\"{2} \"c\"{1,} \"d\"{,1}\n",
        Gbnf,
        &["aabbc", "aaabbccd", "aabbccccc"],
        &["abbc", "aaaabbc", "aabc", "aabbb", "aabb", "aabbcdd"],
    );
    check_language(
        "root ::= ([0-9] \"-\"){0,2} \"x\"\n",
        Gbnf,
        &["x", "1-x", "1-2-x"],
        &["1-2-3-x", "1x"],
    );
}

#[test]
fn classes_ranges_negation_and_any() {
    check_language(
        "root ::= [a-cx] [^a-z\\n] .\n",
        Gbnf,
        &["aA\n", "x9\u{e9}", "c \u{1F600}"],
        &["dA1", "ab1", "a\n1", "aA"],
    );
    // `-` first or last in a class is literal; `]` escaped.
    check_language(
        "root ::= [-+] [a\\]-]\n",
        Gbnf,
        &["-a", "+]", "+-"],
        &["*a", "-b"],
    );
}

#[test]
fn literals_with_escapes() {
    check_language(
        "root ::= \"\\\"q\\\" \\x41\\u00e9\\t\\\\\"\n",
        Gbnf,
        &["\"q\" A\u{e9}\t\\"],
        &["\"q\" A\u{e9} \\", "q A\u{e9}\t\\"],
    );
}

#[test]
fn comments_multiline_rules_dashed_names_and_crlf() {
    let src = "# header comment\r\nroot ::= greet-word (\r\n  \" \" name # trailing\r\n)?\r\n\
               greet-word ::= \"hi\" |\r\n  \"yo\"\r\nname ::= [A-Z] [a-z]*\r\n";
    check_language(
        src,
        Gbnf,
        &["hi", "yo Ann", "hi B"],
        &["hey", "hi ann", "hi  Ann"],
    );
}

#[test]
fn empty_alternatives_and_empty_strings() {
    check_language(
        "root ::= \"a\" opt \"b\"\nopt ::= \"x\" | \"\" |\n",
        Gbnf,
        &["ab", "axb"],
        &["axxb", "a"],
    );
}

#[test]
fn nested_groups_and_postfix_on_groups() {
    check_language(
        "root ::= ((\"a\" | \"b\")+ \";\")* \"end\"\n",
        Gbnf,
        &["end", "ab;end", "a;ba;end"],
        &[";end", "abend", "ab;"],
    );
}
