//! Every llama.cpp GBNF file in tests/data/gbnf loads and constrains correctly, through
//! the small test vocabulary and through the real SmolLM2 vocabulary.

use crate::common;

use common::check_language;
use grammars::Format;

fn gbnf(name: &str) -> String {
    let path = format!("{}/tests/data/gbnf/{name}.gbnf", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn arithmetic() {
    check_language(
        &gbnf("arithmetic"),
        Format::Gbnf,
        &["1+2=3\n", "x = 42\n", "(a+b)*c=d\n1=1\n", "foo_1/2=bar\n"],
        &["1+2=3", "=3\n", "1+=2\n", "A=1\n", ""],
    );
}

#[test]
fn c() {
    check_language(
        &gbnf("c"),
        Format::Gbnf,
        &[
            "",
            "int main(){return 0;}",
            "int f(int x){x = x+1;return x;}",
            "float g(){while(a<b){a = a+1;}}",
            "char h(){// note\n}",
        ],
        &[
            "int main(){return 0}",
            "intmain(){}",
            "int main()",
            "main(){}",
            "int f(){x=1;}",
        ],
    );
}

#[test]
fn chess() {
    check_language(
        &gbnf("chess"),
        Format::Gbnf,
        &[
            "1. e4 e5\n2. Nf3 Nc6\n",
            "1. d4 d5\n2. c4 dxc4\n3. O-O O-O-O\n",
            "1. e4 e5\n2. Qh5 Nc6\n3. Bc4 Nf6\n4. Qxf7# Ke7\n",
        ],
        &[
            "1. e4 e5\n",
            "1. e9 e5\n2. Nf3 Nc6\n",
            "1. e4 e5\n2. Nf3\n",
            "1.e4 e5\n2. Nf3 Nc6\n",
        ],
    );
}

#[test]
fn english() {
    check_language(
        &gbnf("english"),
        Format::Gbnf,
        &["Hello world!", "It's 5 o'clock.", "a", "one\ttwo\nthree"],
        &["", "Hello  world", " leading", "caf\u{e9}", "trailing "],
    );
}

#[test]
fn json() {
    check_language(
        &gbnf("json"),
        Format::Gbnf,
        &[
            "{}",
            "{\"a\": 1}",
            "{\"a\": 1, \"b\": [true, \"x\"]}",
            "{\"k\": \"\\u00e9\\n\", \"n\": -12}",
            "{\"nested\": {\"deep\": {}}}",
        ],
        &[
            "{ \"a\" : 1}",
            "{\"a\": null}",
            "[1]",
            "{\"a\": 1,}",
            "{\"a\": 1.5}",
            "{\"a\": \"unterminated}",
        ],
    );
}

#[test]
fn json_arr() {
    check_language(
        &gbnf("json_arr"),
        Format::Gbnf,
        &[
            "[\n]",
            "[\n1,\n{\"a\": null}]",
            "[\n\"x\",\n2.5e-3]",
            "[\n[1, 2],\n{\"k\": [false]}]",
        ],
        &["[1]", "[\n1, 2]", "[\n01]", "[\n1,\n]", "[\n]\n"],
    );
}

#[test]
fn list() {
    check_language(
        &gbnf("list"),
        Format::Gbnf,
        &["- milk\n", "- eggs\n- bread\n", "- caf\u{e9} \u{2615}\n"],
        &["", "- \n", "-milk\n", "- milk", "- a\u{2028}b\n"],
    );
}
