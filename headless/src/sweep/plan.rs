//! A sweep plan (a TOML file) and the grid of cells it stands for.
//!
//! ```toml
//! title = "G_sk"
//! models = ["toy:gsk"]              # GGUF paths (relative to the plan) or toy names
//! prompts = [""]                    # optional (default: one empty prompt)
//! chat = false                      # wrap prompts in the chat template
//! samplers = ["lcd", "cars", "mcmc-uniform", "awrs-smc"]
//! seeds = 3                         # 0, 1, 2; or a list of seeds
//!
//! [constraints.sk]                  # a name, then one of regex / grammar / json_schema / text
//! regex = "00000|1[01]{4}"
//! # prompt = "…" or prompt_file = "…" (or a list of files, joined), chat = true: this
//! # constraint's own prompt
//! # exact = false: no enumeration of P^L for this one (an infinite language)
//!
//! [params]                          # a list is an axis of the grid, a value is fixed
//! n = 20
//! max_tokens = 8
//! steps = [1, 4]                    # MCMC samplers only
//! particles = [4, 16]               # SMC samplers only
//! batch = 1                         # rejection samplers only
//! max_generations = 2000            # exact samplers give up after this many in a row
//! generation_cap = 200              # exact samplers stop after this many in all
//! ```

pub use super::cell::{Cell, Definition};
use super::table::TableSpec;
use crate::constraint_source;
use crate::failure::{Failure, Result, fail};
use sampler_core::Vocabulary;
use sampler_core::samplers::Method;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most cells one plan may expand to.
pub const MAX_CELLS: usize = 100_000;

/// A plan, read and expanded: its title and every cell of the grid, in a fixed order.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The title on the summary and the plots.
    pub title: String,
    /// Every cell, models outermost and seeds innermost.
    pub cells: Vec<Cell>,
    /// Tables in a paper's shape that the summary prints (`[[tables]]`).
    pub tables: Vec<TableSpec>,
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    title: Option<String>,
    models: Vec<String>,
    #[serde(default)]
    prompts: Option<OneOrMany<String>>,
    #[serde(default)]
    chat: bool,
    samplers: Vec<String>,
    seeds: Seeds,
    constraints: BTreeMap<String, ConstraintFile>,
    #[serde(default)]
    params: ParamsFile,
    #[serde(default)]
    hmm_engine: Option<String>,
    #[serde(default)]
    tables: Vec<TableSpec>,
}

/// `seeds = 3` (0, 1, 2) or `seeds = [7, 9]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Seeds {
    Count(u64),
    List(Vec<u64>),
}

/// A value or a list of values (an axis of the grid).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    fn values(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// `[constraints.NAME]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConstraintFile {
    regex: Option<String>,
    grammar: Option<PathBuf>,
    json_schema: Option<PathBuf>,
    text: Option<String>,
    format: Option<String>,
    exact: Option<bool>,
    prompt: Option<String>,
    prompt_file: Option<OneOrMany<PathBuf>>,
    chat: Option<bool>,
}

/// `[params]`: each a value or a list.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ParamsFile {
    n: Option<OneOrMany<usize>>,
    max_tokens: Option<OneOrMany<usize>>,
    steps: Option<OneOrMany<usize>>,
    particles: Option<OneOrMany<usize>>,
    batch: Option<OneOrMany<usize>>,
    max_generations: Option<u64>,
    generation_cap: Option<u64>,
}

/// Reads and expands the plan at `path`; an error names the file and what is wrong.
pub fn load(path: &Path) -> Result<Plan> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    parse(&text, path.parent().unwrap_or(Path::new(".")))
        .map_err(|e| Failure(format!("{}: {}", path.display(), e.0)))
}

/// Expands a plan's text; files it names are relative to `dir`.
pub fn parse(text: &str, dir: &Path) -> Result<Plan> {
    let f: PlanFile = toml::from_str(text).map_err(|e| Failure(one_line(&e.to_string())))?;
    if f.models.is_empty() || f.samplers.is_empty() || f.constraints.is_empty() {
        return fail("a plan needs at least one model, one sampler and one constraint");
    }
    let methods = f
        .samplers
        .iter()
        .map(|s| {
            s.parse::<Method>()
                .map_err(|e| Failure(format!("samplers: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let seeds = match f.seeds {
        Seeds::Count(0) => return fail("seeds: at least one"),
        Seeds::Count(k) => (0..k).collect(),
        Seeds::List(v) if v.is_empty() => return fail("seeds: at least one"),
        Seeds::List(v) => v,
    };
    let prompts = f
        .prompts
        .map_or_else(|| vec![String::new()], |p| p.values());
    let axis = |v: &Option<OneOrMany<usize>>, default: usize, name: &str| -> Result<Vec<usize>> {
        let values = v.as_ref().map_or_else(|| vec![default], |v| v.values());
        if values.is_empty() || values.contains(&0) {
            return fail(format!("params.{name}: give values of at least 1"));
        }
        Ok(values)
    };
    let p = &f.params;
    let (ns, max_tokens) = (axis(&p.n, 10, "n")?, axis(&p.max_tokens, 32, "max_tokens")?);
    let (steps, particles) = (
        axis(&p.steps, 10, "steps")?,
        axis(&p.particles, 8, "particles")?,
    );
    let batches = axis(&p.batch, 1, "batch")?;
    let max_generations = p.max_generations.unwrap_or(10_000).max(1);
    if p.generation_cap == Some(0) {
        return fail("params.generation_cap: give a value of at least 1");
    }
    // Each constraint with its prompts: its own, or the plan's.
    let mut constraints = Vec::new();
    for (name, c) in &f.constraints {
        let own = match (&c.prompt, &c.prompt_file) {
            (Some(_), Some(_)) => {
                return fail(format!(
                    "constraints.{name}: give prompt or prompt_file, not both"
                ));
            }
            (Some(p), None) => Some(p.clone()),
            (None, Some(files)) => {
                // Several files are one prompt, in order (a grammar, then the task).
                let mut text = String::new();
                for file in files.values() {
                    let path = dir.join(file);
                    text += &std::fs::read_to_string(&path).map_err(|e| {
                        Failure(format!("constraints.{name}: {}: {e}", path.display()))
                    })?;
                }
                Some(text)
            }
            (None, None) => None,
        };
        let prompts = own.map_or_else(|| prompts.clone(), |p| vec![p]);
        let chat = c.chat.unwrap_or(f.chat);
        constraints.push((name.clone(), definition(name, c, dir)?, prompts, chat));
    }
    let models: Vec<String> = f
        .models
        .iter()
        .map(|m| {
            if m.starts_with("toy:") || Path::new(m).is_absolute() {
                m.clone()
            } else {
                let path = std::path::absolute(dir.join(m)).unwrap_or_else(|_| dir.join(m));
                lexically_normal(&path).to_string_lossy().into_owned()
            }
        })
        .collect();
    let hmm_engine = f.hmm_engine.unwrap_or_else(|| "burn-flex".into());
    let mut cells = Vec::new();
    for (model_index, model) in models.iter().enumerate() {
        for (constraint, definition, prompts, chat) in &constraints {
            for (prompt_index, prompt) in prompts.iter().enumerate() {
                for &method in &methods {
                    let only = |on: bool, v: &Vec<usize>| if on { v.clone() } else { vec![1] };
                    for &max_tokens in &max_tokens {
                        for &n in &ns {
                            for &steps in &only(method.is_mcmc(), &steps) {
                                for &particles in &only(method.is_smc(), &particles) {
                                    for &batch in &only(method.is_exact(), &batches) {
                                        for &seed in &seeds {
                                            if cells.len() == MAX_CELLS {
                                                return fail(format!(
                                                    "the plan's grid has more than {MAX_CELLS} \
                                                     cells: split it"
                                                ));
                                            }
                                            cells.push(Cell {
                                                model: model.clone(),
                                                model_index,
                                                constraint: constraint.clone(),
                                                definition: definition.clone(),
                                                prompt: prompt.clone(),
                                                prompt_index,
                                                chat: *chat,
                                                method,
                                                n,
                                                steps,
                                                particles,
                                                max_tokens,
                                                batch,
                                                seed,
                                                max_generations,
                                                generation_cap: p.generation_cap,
                                                hmm_engine: hmm_engine.clone(),
                                            });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // Names that differ only in what a file name cannot hold would share files.
    let mut ids = std::collections::HashMap::new();
    for c in &cells {
        // Case folded: some file systems do not tell `SK` from `sk`.
        match ids.insert(c.id().to_ascii_lowercase(), &c.constraint) {
            Some(other) if *other != c.constraint => {
                return fail(format!(
                    "constraints {other:?} and {:?} would share files ({}): rename one",
                    c.constraint,
                    c.id()
                ));
            }
            Some(_) => {
                return fail(format!(
                    "the plan lists one cell twice ({}): a seed or a parameter value is repeated",
                    c.id()
                ));
            }
            None => {}
        }
    }
    for (i, t) in f.tables.iter().enumerate() {
        super::table::check(t, i, &cells)?;
    }
    Ok(Plan {
        title: f.title.unwrap_or_else(|| "sweep".into()),
        cells,
        tables: f.tables,
    })
}

/// A `[constraints.NAME]` table as a [`Definition`]: exactly one source, files read now.
fn definition(name: &str, c: &ConstraintFile, dir: &Path) -> Result<Definition> {
    let given = [
        c.regex.is_some(),
        c.grammar.is_some(),
        c.json_schema.is_some(),
        c.text.is_some(),
    ];
    if given.iter().filter(|&&g| g).count() != 1 {
        return fail(format!(
            "constraints.{name}: give exactly one of regex, grammar, json_schema, text"
        ));
    }
    let read = |p: &PathBuf| {
        let path = dir.join(p);
        std::fs::read_to_string(&path)
            .map_err(|e| Failure(format!("constraints.{name}: {}: {e}", path.display())))
    };
    let (regex, text, format) = if let Some(re) = &c.regex {
        (Some(re.clone()), None, None)
    } else if let Some(p) = &c.grammar {
        let format = c
            .format
            .clone()
            .or_else(|| grammars::Format::from_path(&p.to_string_lossy()).map(|f| f.to_string()));
        (None, Some(read(p)?), format)
    } else if let Some(p) = &c.json_schema {
        (
            None,
            Some(read(p)?),
            Some(c.format.clone().unwrap_or_else(|| "json-schema".into())),
        )
    } else {
        (None, c.text.clone(), c.format.clone())
    };
    let d = Definition {
        regex,
        text,
        format,
        exact: c.exact.unwrap_or(true),
    };
    check_compiles(name, &d)?;
    Ok(d)
}

/// Compiles `d` over a vocabulary of the 256 single bytes, so a mistake in a constraint
/// stops the plan with the constraint's name (and the line and column, in a grammar)
/// before any cell runs; each cell compiles it again over its model's vocabulary.
fn check_compiles(name: &str, d: &Definition) -> Result<()> {
    let (spec, format) = d.spec(name);
    let bytes = Vocabulary::new(
        (0..=255u8).map(|b| vec![b]).chain([Vec::new()]).collect(),
        256,
        &[],
    );
    constraint_source::build(&spec, format, &bytes).map(|_| ())
}

/// `a/b/../c` as `a/c`: the path a plan names, without the detour through its folder.
fn lexically_normal(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// A TOML error's message on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"
        models = ["toy:gsk"]
        samplers = ["lcd", "mcmc-uniform", "awrs-smc", "cars"]
        seeds = 2
        [constraints.sk]
        regex = "00000|1[01]{4}"
        [params]
        n = 5
        max_tokens = 8
        steps = [1, 4]
        particles = [2, 8, 16]
        batch = [1, 4]
    "#;

    #[test]
    fn axes_apply_only_to_the_samplers_that_use_them() {
        let plan = parse(PLAN, Path::new(".")).unwrap();
        // lcd 1 + mcmc 2 steps + smc 3 particles + cars 2 batches, times 2 seeds.
        assert_eq!(plan.cells.len(), (1 + 2 + 3 + 2) * 2);
        let ids: std::collections::HashSet<_> = plan.cells.iter().map(Cell::id).collect();
        assert_eq!(ids.len(), plan.cells.len(), "ids are unique");
        let mcmc = plan
            .cells
            .iter()
            .find(|c| c.method == Method::McmcUniform)
            .unwrap();
        assert_eq!(mcmc.id(), "m0-gsk.sk.p0.mcmc-uniform.n5.t8.k1.s0");
        assert_eq!(mcmc.group(), "m0-gsk.sk.p0.t8");
        let p = lexically_normal(Path::new("assets/sweeps/../models/./m.gguf"));
        assert_eq!(p, Path::new("assets/models/m.gguf"));
        assert_eq!(
            lexically_normal(Path::new("../a/../../b")),
            Path::new("../../b")
        );
    }

    /// Every plan the repository ships reads and expands, its tables included; the papers'
    /// prompts that put the grammar first do.
    #[test]
    fn the_shipped_plans_read() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/sweeps");
        let mut plans = Vec::new();
        for dir in [root.clone(), root.join("papers")] {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                if path.extension().is_some_and(|x| x == "toml") {
                    let plan = load(&path).unwrap_or_else(|e| panic!("{e}"));
                    assert!(!plan.cells.is_empty(), "{}", path.display());
                    plans.push((path, plan));
                }
            }
        }
        let (_, cars) = plans
            .iter()
            .find(|(p, _)| p.ends_with("cars_table7.toml"))
            .expect("the CARS plan");
        let g = cars.cells.iter().find(|c| c.constraint == "xml-g").unwrap();
        assert!(
            g.prompt
                .starts_with("Every solution must follow this grammar")
                && g.prompt.contains("<!ATTLIST")
                && g.prompt.ends_with("Solution 3:\n"),
            "{}",
            g.prompt
        );
        assert_eq!(cars.tables.len(), 2);
        assert!(cars.cells.iter().all(|c| c.generation_cap == Some(200)));
    }

    #[test]
    fn mistakes_are_named() {
        let e = |t: &str| parse(t, Path::new(".")).unwrap_err().0;
        let bad_method = PLAN.replace("\"cars\"", "\"carz\"");
        assert!(e(&bad_method).contains("carz"), "{}", e(&bad_method));
        let two = PLAN.replace("regex = ", "text = \"a\"\nregex = ");
        assert!(e(&two).contains("exactly one"), "{}", e(&two));
        let unknown = PLAN.replace("n = 5", "n = 5\nsteeps = 3");
        assert!(e(&unknown).contains("steeps"), "{}", e(&unknown));
        // A constraint that does not compile stops the plan, named, before any cell runs.
        let regex = PLAN.replace("00000|1[01]{4}", "0*1(");
        assert!(
            e(&regex).starts_with("constraints.sk: invalid regex"),
            "{}",
            e(&regex)
        );
        let lark = PLAN.replace(r#"regex = "00000|1[01]{4}""#, r#"text = "start: \"0\" x""#);
        assert!(e(&lark).starts_with("constraints.sk:1:"), "{}", e(&lark));
        let clash = PLAN.replace(
            "[params]",
            "[constraints.\"s k\"]\nregex = \"1\"\n[constraints.s-k]\nregex = \"0\"\n[params]",
        );
        assert!(e(&clash).contains("would share files"), "{}", e(&clash));
        let twice = PLAN.replace("seeds = 2", "seeds = [3, 3]");
        assert!(e(&twice).contains("one cell twice"), "{}", e(&twice));
        let zero = PLAN.replace("n = 5", "n = 0");
        assert!(e(&zero).contains("params.n"), "{}", e(&zero));
        let missing = parse(
            &PLAN.replace("regex = \"00000|1[01]{4}\"", "grammar = \"nope.gbnf\""),
            Path::new("/nonexistent"),
        )
        .unwrap_err()
        .0;
        assert!(
            missing.contains("constraints.sk") && missing.contains("nope.gbnf"),
            "{missing}"
        );
    }
}
