//! Fuzz targets: one function per input front end that a stranger controls, each taking
//! arbitrary bytes and asserting what must hold beyond "no panic" where a property exists.
//!
//! - [`gguf`]: the GGUF reader and the model loaded from the file, up to a first forward;
//! - [`grammar`]: GBNF (parser, checks and translation), Lark and JSON Schema, through our
//!   front ends into llguidance, then a few constraint steps;
//! - [`regex`]: the regex front end, its byte DFA (checked against the `regex` crate) and
//!   the token constraint with its tensorized automaton;
//! - [`permalink`]: the playground's `#v=…&s=…` decoder (lz-string, JSON, migrations);
//! - [`chat_template`]: a model file's Jinja chat template, rendered.
//!
//! `cargo xtask fuzz [TARGET] [--minutes N]` runs them under AFL++ (cargo-afl, stable
//! toolchain); the seed corpora in `fuzz/corpus/<target>/` and every input that once
//! failed, in `fuzz/regressions/<target>/`, are replayed by this crate's tests.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod chat_template;
pub mod gguf;
pub mod grammar;
pub mod permalink;
pub mod regex;
mod util;

/// A fuzz target: its name on the command line and its entry point.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The name (`cargo xtask fuzz NAME`, the corpus directory).
    pub name: &'static str,
    /// Runs one input; panics when a property fails.
    pub run: fn(&[u8]),
}

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "gguf",
        run: gguf::run,
    },
    Target {
        name: "gbnf",
        run: grammar::gbnf,
    },
    Target {
        name: "lark",
        run: grammar::lark,
    },
    Target {
        name: "json_schema",
        run: grammar::json_schema,
    },
    Target {
        name: "regex",
        run: regex::run,
    },
    Target {
        name: "permalink",
        run: permalink::run,
    },
    Target {
        name: "chat_template",
        run: chat_template::run,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Seeds made by code rather than committed (a tiny model file, every example's
/// permalink): `(target, file name, bytes)`.
pub fn generated_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut seeds = vec![("gguf", "tiny_llama.gguf".to_string(), lm::tiny_llama_gguf())];
    for e in playground::examples::examples() {
        let link = playground::permalink::encode(&e.state());
        seeds.push(("permalink", format!("{}.txt", e.id), link.into_bytes()));
    }
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every committed seed and regression input of every target runs through its target.
    #[test]
    fn corpora_and_regressions_replay() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut seen = 0;
        for t in TARGETS {
            for dir in ["corpus", "regressions"] {
                let Ok(entries) = std::fs::read_dir(root.join(dir).join(t.name)) else {
                    continue;
                };
                for e in entries {
                    let path = e.unwrap().path();
                    let data = std::fs::read(&path).unwrap();
                    let r = std::panic::catch_unwind(|| (t.run)(&data));
                    assert!(r.is_ok(), "{} failed on {}", t.name, path.display());
                    seen += 1;
                }
            }
        }
        for (name, _, data) in generated_seeds() {
            (target(name).unwrap().run)(&data);
        }
        assert!(
            seen >= TARGETS.len(),
            "the corpora are missing ({seen} files)"
        );
    }

    /// Each target has committed seeds.
    #[test]
    fn every_target_has_seeds() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for t in TARGETS {
            let n = std::fs::read_dir(root.join(t.name)).map_or(0, |d| d.count());
            let generated = generated_seeds().iter().filter(|s| s.0 == t.name).count();
            assert!(n + generated > 0, "no seeds for {}", t.name);
        }
    }
}
