//! Every example in assets/examples compiles (format from its extension) and accepts the
//! hand-written strings below and rejects the others, on both vocabularies.

use crate::common;

use std::path::PathBuf;

use common::check_language;
use grammars::Format;

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/examples")
}

/// (file, accepted, rejected) for every grammar example.
const CASES: &[(&str, &[&str], &[&str])] = &[
    (
        "gsk.gbnf",
        &["00000", "10101", "11111", "10000"],
        &["00001", "0000", "101010", ""],
    ),
    (
        "arithmetic.lark",
        &["1+2", "(3+5)*3", "24", "2*(3+4*(5-1))/7"],
        &["1+", "(1", "1 + 2", "+1", "()"],
    ),
    (
        "json_x_integer.json",
        &["{\"x\": 7}", "{\"x\":-42}", "{ \"x\" : 100 }"],
        &[
            "{\"x\": 7.5}",
            "{\"y\": 1}",
            "{}",
            "{\"x\": \"7\"}",
            "{\"x\": 1, \"y\": 2}",
        ],
    ),
    (
        "tool_call.json",
        &[
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}",
            "{\"name\": \"get_time\", \"arguments\": {\"city\": \"Tokyo\"}}",
        ],
        &[
            "{\"name\": \"get_news\", \"arguments\": {\"city\": \"Paris\"}}",
            "{\"name\": \"get_time\"}",
            "{\"name\": \"get_time\", \"arguments\": {\"city\": \"\"}}",
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"kelvin\"}}",
        ],
    ),
    (
        "sqlite_test.gbnf",
        &[concat!(
            "set testdir [file dirname $argv0]\n",
            "source $testdir/tester.tcl\n",
            "set testprefix wal\n",
            "set ::timeout 60000\n",
            "do_test wal-1.1 {\n",
            "  execsql {CREATE TABLE t1(a INTEGER, b TEXT); INSERT INTO t1 VALUES(1, 'one')}\n",
            "} {}\n",
            "do_test wal-1.2 {\n",
            "  execsql {SELECT count(*) FROM t1}\n",
            "} {1}\n",
            "ifcapable wal {\n",
            "do_execsql_test wal-2.1 {\n",
            "  PRAGMA journal_mode=WAL;\n",
            "} {wal}\n",
            "}\n",
            "finish_test\n",
        )],
        &[
            // Only one do_test block.
            concat!(
                "set testdir [file dirname $argv0]\n",
                "source $testdir/tester.tcl\n",
                "set testprefix wal\n",
                "set ::timeout 60000\n",
                "do_test wal-1.1 {\n",
                "  execsql {SELECT 1 FROM t1}\n",
                "} {1}\n",
                "finish_test\n",
            ),
            // Missing the timeout directive.
            concat!(
                "set testdir [file dirname $argv0]\n",
                "source $testdir/tester.tcl\n",
                "set testprefix wal\n",
                "finish_test\n",
            ),
        ],
    ),
    (
        "xml_doctype.gbnf",
        &[
            concat!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                "<!DOCTYPE note [\n",
                "  <!ENTITY sig \"Take care!\">\n",
                "  <!ELEMENT note (#PCDATA)>\n",
                "  <!ATTLIST note lang CDATA #IMPLIED>\n",
                "]>\n",
                "<note lang=\"en\">Hello &sig; <!-- c --><b/></note>\n",
            ),
            concat!(
                "<?xml version=\"1.0\"?>\n",
                "<!DOCTYPE status [\n",
                "  <!ELEMENT status (code, text)>\n",
                "  <!ATTLIST status level (low|high) \"low\">\n",
                "]>\n",
                "<status level=\"high\"><code>7</code><![CDATA[x < y]]></status>",
            ),
        ],
        &[
            // No ATTLIST in the DTD.
            concat!(
                "<?xml version=\"1.0\"?>\n",
                "<!DOCTYPE note [\n",
                "  <!ELEMENT note (#PCDATA)>\n",
                "]>\n",
                "<note>hi</note>",
            ),
            "<note>hi</note>",
        ],
    ),
    (
        "smiles_acrylate.gbnf",
        &[
            "C=CC(=O)OCC1=CC=CC=C1",
            "CC(=C)C(=O)OC1=CC=CC=C1",
            "CCCCCCCOC(=O)C(=C)C",
            "CC(C)COC(=O)C(=C)C",
            "CCCOC(=O)C=C",
            "C=CC(=O)OCC[N+](C)(C)C",
        ],
        &[
            "CCO",
            "C=CC(=O)O",
            "C=CC(=O)OC(",
            "c1ccccc1",
            "C=CC(=O)OCCX",
        ],
    ),
    (
        "sygus_slia.gbnf",
        &[
            "(str.++ (str.at name 0) \".\")",
            "(str.++ (str.at name 0) (str.++ \".\" (str.++ (str.at name (+ (str.indexof name \" \" 0) 1)) \".\")))",
            "name",
        ],
        &[
            "(str.++ name)",
            "(str.at name 3)",
            "\"N\"",
            "(str.len name)",
        ],
    ),
    (
        "sygus_bv4.gbnf",
        &[
            "(bvnot (bvlshr s t))",
            "#x7",
            "(bvadd (bvneg s) (bvand t #x8))",
        ],
        &["(bvnot s t)", "#x9", "(bvlor s t)", "u"],
    ),
    (
        "pddl_satellite.lark",
        &[
            "(switch_on instrument2 satellite1)",
            "(turn_to satellite0 Star4 GroundStation1) (switch_on instrument0 satellite0) (calibrate satellite0 instrument0 GroundStation1) (take_image satellite0 Star4 instrument0 spectrograph2)",
        ],
        &[
            "(switch_on instrument8 satellite1)",
            "(take_image satellite0 Star4 instrument0)",
            "(switch_on instrument2 satellite1) ",
            "",
        ],
    ),
];

#[test]
fn every_example_compiles_and_constrains() {
    let mut seen = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(examples_dir())
        .expect("assets/examples")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if name.ends_with(".prompt.txt") || name == "README.md" {
            continue;
        }
        let format =
            Format::from_path(&name).unwrap_or_else(|| panic!("{name}: unknown extension"));
        if format == Format::Regex {
            continue; // regexes belong to sampler-core's regex constraint
        }
        let prompt = path.with_file_name(format!(
            "{}.prompt.txt",
            name.split('.').next().unwrap_or("")
        ));
        assert!(prompt.exists(), "{name} has a sibling prompt file");
        let source = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(
            Format::detect(&source),
            format,
            "{name}: detection agrees with the extension"
        );
        let (_, accept, reject) = CASES
            .iter()
            .find(|(f, _, _)| *f == name)
            .unwrap_or_else(|| panic!("{name}: add accepted strings to CASES"));
        check_language(&source, format, accept, reject);
        seen.push(name);
    }
    assert_eq!(seen.len(), CASES.len(), "every case has its file: {seen:?}");
}

/// The papers' sweep prompts (assets/sweeps/papers) show the model worked solutions; each
/// must be in the grammar the sweep constrains to, or the prompt teaches a wrong answer.
/// The JSON grammar also refuses what the CARS benchmark rules out (fewer than three pairs,
/// another first pair).
#[test]
fn the_papers_few_shot_solutions_are_in_their_grammars() {
    let papers = examples_dir().join("../sweeps/papers");
    let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    for (prompt, grammar) in [
        ("json.prompt.txt", papers.join("json_fuzz.gbnf")),
        ("xml.prompt.txt", examples_dir().join("xml_doctype.gbnf")),
        ("sql.prompt.txt", examples_dir().join("sqlite_test.gbnf")),
    ] {
        let text = read(papers.join(prompt));
        // "Solution k:\n" up to the blank line before the next "Question".
        let solutions: Vec<String> = text
            .split("Solution ")
            .skip(1)
            .filter_map(|s| {
                let body = s.split_once(":\n")?.1;
                let body = body.split("\n\nQuestion").next()?;
                (!body.trim().is_empty()).then(|| format!("{}\n", body.trim_end()))
            })
            .collect();
        assert_eq!(solutions.len(), 2, "{prompt}: two worked solutions");
        let accept: Vec<&str> = solutions.iter().map(String::as_str).collect();
        let reject: &[&str] = if prompt.starts_with("json") {
            &[
                "{\"name\": \"test\", \"a\": 1}",
                "{\"id\": \"test\", \"a\": 1, \"b\": 2}",
            ]
        } else {
            &[]
        };
        check_language(&read(grammar), Format::Gbnf, &accept, reject);
    }
}

/// An example prompt that shows the model worked solutions (`Solution: <term>` lines, as
/// ASAp's in-context prompts do) must show solutions in the example's own grammar, or the
/// prompt teaches an answer the constraint then forbids. SyGuS SLIA's prompt shows three.
#[test]
fn the_examples_worked_solutions_are_in_their_grammars() {
    let mut checked = Vec::new();
    for (name, _, _) in CASES {
        let stem = name.split('.').next().unwrap_or_default();
        let prompt = examples_dir().join(format!("{stem}.prompt.txt"));
        let text = std::fs::read_to_string(&prompt).unwrap_or_else(|e| panic!("{prompt:?}: {e}"));
        let solutions: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("Solution: "))
            .collect();
        if solutions.is_empty() {
            continue;
        }
        let path = examples_dir().join(name);
        let format = Format::from_path(name).expect("known extension");
        let source = std::fs::read_to_string(&path).expect("readable");
        check_language(&source, format, &solutions, &[]);
        checked.push((*name, solutions.len()));
    }
    assert!(
        checked.contains(&("sygus_slia.gbnf", 3)),
        "the SLIA prompt shows three worked solutions: {checked:?}"
    );
}
