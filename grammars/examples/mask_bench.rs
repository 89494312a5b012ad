//! Prints microseconds per full-vocabulary mask (SmolLM2, V = 49152) computed by
//! llguidance for every example grammar, along the token walk of one accepted string.
//!
//! Run: `cargo run -p grammars --example mask_bench [-- MODEL.gguf]`. Figures are printed,
//! never asserted.

use std::path::PathBuf;
use std::time::Instant;

use grammars::{Compiler, Format};
use sampler_core::Constraint;

/// (example file, one accepted string whose token walk is timed).
const WALKS: &[(&str, &str)] = &[
    ("gsk.gbnf", "10101"),
    ("arithmetic.lark", "2*(3+4*(5-1))/7"),
    ("json_x_integer.json", "{\"x\": 42}"),
    (
        "tool_call.json",
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}",
    ),
    (
        "sqlite_test.gbnf",
        "set testdir [file dirname $argv0]\nsource $testdir/tester.tcl\nset testprefix wal\nset ::timeout 60000\ndo_test wal-1.1 {\n  execsql {CREATE TABLE t1(a INTEGER, b TEXT)}\n} {}\ndo_test wal-1.2 {\n  execsql {SELECT count(*) FROM t1}\n} {0}\nfinish_test\n",
    ),
    (
        "xml_doctype.gbnf",
        "<?xml version=\"1.0\"?>\n<!DOCTYPE note [\n  <!ELEMENT note (#PCDATA)>\n  <!ATTLIST note lang CDATA #IMPLIED>\n]>\n<note lang=\"en\">Hello</note>",
    ),
    ("smiles_acrylate.gbnf", "C=CC(=O)OCC1=CC=CC=C1"),
    ("sygus_slia.gbnf", "(str.++ (str.at name 0) \".\")"),
    ("sygus_bv4.gbnf", "(bvnot (bvlshr s t))"),
    (
        "pddl_satellite.lark",
        "(switch_on instrument0 satellite0) (take_image satellite0 Star4 instrument0 spectrograph2)",
    ),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("assets/models/SmolLM2-135M-Instruct.Q4_1.gguf"));
    let bytes = std::fs::read(&model)?;
    let tokenizer = lm::Tokenizer::from_gguf(&lm::gguf::Gguf::parse(&bytes)?)?;
    let vocab = tokenizer.vocabulary();
    let t0 = Instant::now();
    let compiler = Compiler::new(&vocab)?;
    println!(
        "vocabulary: {} tokens; token trie + llguidance factory: {:.1} ms",
        vocab.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    println!(
        "{:<22} {:>10} {:>7} {:>10} {:>10} {:>10} {:>10} {:>11}",
        "example",
        "compile_ms",
        "masks",
        "first_us",
        "mean_us",
        "median_us",
        "max_us",
        "advance_us"
    );
    for (file, text) in WALKS {
        let source = std::fs::read_to_string(root.join("assets/examples").join(file))?;
        let t = Instant::now();
        let c = compiler.compile(&source, Format::from_path(file))?;
        let compile_ms = t.elapsed().as_secs_f64() * 1e3;
        let tokens = tokenizer.encode(text)?;
        let mut state = c.initial();
        let mut times = Vec::new();
        let mut advance_us = 0.0;
        for &tok in &tokens {
            let t = Instant::now();
            let mask = c.mask(&state);
            times.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(
                mask.contains(tok),
                "{file}: token {tok} of the walk is allowed"
            );
            let t = Instant::now();
            state = c.advance(&state, tok).ok_or("walk leaves the language")?;
            advance_us += t.elapsed().as_secs_f64() * 1e6;
        }
        let t = Instant::now();
        let last = c.mask(&state);
        times.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(last.contains(vocab.eos()), "{file}: the walk ends complete");
        let first = times[0];
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let max = sorted[sorted.len() - 1];
        println!(
            "{file:<22} {compile_ms:>10.2} {:>7} {first:>10.1} {mean:>10.1} {median:>10.1} {max:>10.1} {:>11.1}",
            times.len(),
            advance_us / tokens.len().max(1) as f64
        );
    }
    Ok(())
}
