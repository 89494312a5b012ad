//! The summary of a sweep's folder: a row per cell (`summary.csv`), a table per group of
//! cells with the seeds pooled (`summary.md`), and the measures the plots draw.
//!
//! KL and TV compare the distribution of a setting's output samples, pooled over seeds
//! (SMC particles by their weights, normalized within each run; every other sample with
//! weight 1), with exact P^L of the group: KL(q̂ ‖ P^L) in nats (+∞ as soon as one output
//! is outside the language, e.g. an invalid one) and TV = ½ Σ |q̂ − P^L|.
//!
//! Where P^L cannot be enumerated, the KL estimate is the papers' (ASAp §4, the MCMC paper
//! §4.1): KL(q̂ ‖ P) = Σ_y q̂(y) (ln q̂(y) − ln P(y)) over the distinct valid outputs y, with
//! P the unconstrained model's probability of the whole sequence. Since P^L = P / C on valid
//! sequences, it is KL(q̂ ‖ P^L) − ln C: every setting of one group shares the constant, so
//! their order is the order of their distances to the target.

use super::job::{ExactFile, Row};
use super::plan::{Cell, Plan};
pub use super::setting::{Setting, num};
use super::store;
use super::table::{self, Table};
use crate::failure::Result;
use sampler_core::TokenId;
use sampler_core::exact::{kl_divergence, total_variation};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

/// What the folder holds for a plan.
pub struct Summary {
    /// Cells of the plan.
    pub cells: usize,
    /// Cells finished.
    pub finished: usize,
    /// Finished cells whose run ended in an error.
    pub failed: usize,
    /// Settings, in the plan's order.
    pub settings: Vec<Setting>,
}

/// Reads every finished cell of `plan` in `out` and pools each setting's seeds.
pub fn read(plan: &Plan, out: &Path) -> Result<Summary> {
    let mut finished = Vec::new();
    for cell in &plan.cells {
        if let Some(row) = store::finished_row(out, cell) {
            finished.push(row);
        }
    }
    let mut exact: HashMap<String, Option<ExactFile>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut pooled: HashMap<String, (Setting, Outputs, f64, Observed)> = HashMap::new();
    for row in &finished {
        let key = setting_key(&row.cell);
        let q = read_samples(out, &row.cell)?;
        let entry = pooled.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            (empty(&row.cell), HashMap::new(), 0.0, HashMap::new())
        });
        add(&mut entry.0, row);
        for o in q {
            if o.valid {
                entry.3.entry(o.tokens.clone()).or_insert((0.0, o.logp)).0 += o.weight;
            }
            *entry.1.entry(o.tokens).or_default() += o.weight;
            entry.2 += o.weight;
        }
    }
    let mut settings = Vec::new();
    for key in order {
        let (mut s, q, total, observed) = pooled.remove(&key).unwrap_or_else(|| unreachable!());
        s.kl_estimate = kl_estimate(&observed);
        let group = s.cell.group();
        let file = exact
            .entry(group)
            .or_insert_with(|| store::finished_exact(out, &s.cell))
            .as_ref();
        if let Some(file) = file.filter(|f| f.error.is_none() && total > 0.0) {
            s.distance = Some(distance(file, &q, total));
        }
        s.lm_calls /= s.seeds as f64;
        s.forward_tokens /= s.seeds as f64;
        settings.push(s);
    }
    Ok(Summary {
        cells: plan.cells.len(),
        finished: finished.len(),
        failed: finished.iter().filter(|r| r.error.is_some()).count(),
        settings,
    })
}

/// Output sequences with their summed weights.
type Outputs = HashMap<Vec<TokenId>, f64>;

/// Valid output sequences with their summed weights and their log P under the model.
type Observed = HashMap<Vec<TokenId>, (f64, f64)>;

/// One output line as the summary reads it.
struct Output {
    tokens: Vec<TokenId>,
    /// SMC's weight normalized within its run; 1 for every other sample.
    weight: f64,
    /// log P under the unconstrained model.
    logp: f64,
    valid: bool,
}

/// KL(q̂ ‖ P) over the observed valid outputs (the module's doc); `None` without one.
fn kl_estimate(observed: &Observed) -> Option<f64> {
    let total: f64 = observed.values().map(|(w, _)| w).sum();
    (total > 0.0).then(|| {
        observed
            .values()
            .filter(|(w, _)| *w > 0.0)
            .map(|&(w, logp)| {
                let q = w / total;
                q * (q.ln() - logp)
            })
            .sum()
    })
}

/// A setting's name: the cell's id without its seed.
fn setting_key(cell: &Cell) -> String {
    Cell {
        seed: 0,
        ..cell.clone()
    }
    .id()
}

/// A setting with nothing added yet.
fn empty(cell: &Cell) -> Setting {
    Setting {
        cell: cell.clone(),
        seeds: 0,
        samples: 0,
        valid: 0,
        lm_calls: 0.0,
        forward_tokens: 0.0,
        generations: 0,
        seconds: 0.0,
        distance: None,
        kl_estimate: None,
        error: None,
    }
}

/// Adds one seed's row.
fn add(s: &mut Setting, row: &Row) {
    s.seeds += 1;
    s.samples += row.samples;
    s.valid += row.valid;
    s.lm_calls += row.lm_calls as f64;
    s.forward_tokens += row.forward_tokens as f64;
    s.generations += row.generations;
    s.seconds += row.seconds;
    if s.error.is_none() {
        s.error.clone_from(&row.error);
    }
}

/// A cell's outputs with a positive weight: SMC weights as normalized within their run,
/// every other sample 1.
fn read_samples(out: &Path, cell: &Cell) -> Result<Vec<Output>> {
    let path = store::samples_path(out, cell);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| crate::Failure(format!("{}: {e}", path.display())))?;
    let mut v = Vec::new();
    for line in text.lines() {
        let l: serde_json::Value = serde_json::from_str(line)?;
        let output = Output {
            tokens: serde_json::from_value(l["tokens"].clone())?,
            weight: l["weight"].as_f64().unwrap_or(1.0),
            logp: l["logp"].as_f64().unwrap_or(f64::NEG_INFINITY),
            valid: l["valid"] == true,
        };
        if output.weight > 0.0 {
            v.push(output);
        }
    }
    Ok(v)
}

/// KL(q̂ ‖ P^L) and TV of the pooled outputs `q` (weights summing to `total`).
fn distance(exact: &ExactFile, q: &HashMap<Vec<TokenId>, f64>, total: f64) -> (f64, f64) {
    let p: Vec<f64> = exact.entries.iter().map(|(_, p)| *p).collect();
    let mut inside = 0.0;
    let qv: Vec<f64> = exact
        .entries
        .iter()
        .map(|(t, _)| {
            let w = q.get(t).copied().unwrap_or(0.0) / total;
            inside += w;
            w
        })
        .collect();
    let outside = (1.0 - inside).max(0.0);
    let kl = if outside > 1e-12 {
        f64::INFINITY
    } else {
        kl_divergence(&qv, &p)
    };
    (kl, total_variation(&qv, &p) + 0.5 * outside)
}

/// `summary.csv`: one row per finished cell.
pub fn csv(plan: &Plan, out: &Path) -> String {
    let mut s = String::from(
        "model,constraint,prompt,sampler,n,steps,particles,batch,max_tokens,seed,samples,valid,\
         lm_calls,forward_tokens,constraint_checks,generations,seconds,s_per_valid,\
         generations_per_100_valid,error\n",
    );
    for cell in &plan.cells {
        let Some(r) = store::finished_row(out, cell) else {
            continue;
        };
        let c = &r.cell;
        let fields = [
            c.model.clone(),
            c.constraint.clone(),
            c.prompt.clone(),
            c.method.to_string(),
            c.n.to_string(),
            c.steps.to_string(),
            c.particles.to_string(),
            c.batch.to_string(),
            c.max_tokens.to_string(),
            c.seed.to_string(),
            r.samples.to_string(),
            r.valid.to_string(),
            r.lm_calls.to_string(),
            r.forward_tokens.to_string(),
            r.constraint_checks.to_string(),
            r.generations.to_string(),
            format!("{:.4}", r.seconds),
            ratio(r.seconds, r.valid as f64, 1.0),
            ratio(r.generations as f64, r.valid as f64, 100.0),
            r.error.clone().unwrap_or_default(),
        ];
        let quoted: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        s += &quoted.join(",");
        s.push('\n');
    }
    s
}

/// `scale · a / b`, empty when `b` is 0.
fn ratio(a: f64, b: f64, scale: f64) -> String {
    if b > 0.0 {
        format!("{:.4}", scale * a / b)
    } else {
        String::new()
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

/// `summary.md`: a table per group (model, constraint, prompt, token limit), seeds pooled.
pub fn markdown(plan: &Plan, summary: &Summary, plots: &[(String, String)]) -> String {
    let mut s = format!("# {}\n\n", plan.title);
    let _ = writeln!(
        s,
        "{} of {} cells finished{}. KL and TV compare each setting's outputs (seeds pooled) \
         with exact P^L where the language is finite; KL(q̂ ‖ P^L) in nats, ∞ when an output \
         is outside the language. KL est. is KL(q̂ ‖ P) on the observed valid outputs, the \
         papers' estimate where P^L is out of reach: KL(q̂ ‖ P^L) less the log of the valid \
         outputs' mass, a constant shared within a group.\n",
        summary.finished,
        summary.cells,
        if summary.failed > 0 {
            format!(", {} of them ended in an error (below)", summary.failed)
        } else {
            String::new()
        }
    );
    // Each group's settings together, in the plan's order within it.
    let mut settings: Vec<&Setting> = summary.settings.iter().collect();
    settings.sort_by_key(|s| s.cell.group());
    let mut group = String::new();
    for st in settings {
        let g = st.cell.group();
        if g != group {
            group = g;
            let c = &st.cell;
            let _ = writeln!(
                s,
                "\n## {} · {} · prompt {} · at most {} tokens\n",
                super::model_name(&c.model),
                c.constraint,
                c.prompt_index,
                c.max_tokens
            );
            s += "| sampler | seeds | samples | valid | LM calls per run | forward tokens per run \
                  | s per valid | generations per 100 valid | KL | TV | KL est. |\n\
                  |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        }
        let (kl, tv) = st
            .distance
            .map_or(("—".into(), "—".into()), |(k, t)| (num(k), num(t)));
        let _ = writeln!(
            s,
            "| {}{} | {} | {} | {} | {} | {} | {} | {} | {kl} | {tv} | {} |",
            st.cell.setting(),
            if st.error.is_some() { " (error)" } else { "" },
            st.seeds,
            st.samples,
            st.valid,
            num(st.lm_calls),
            num(st.forward_tokens),
            num(st.seconds_per_valid()),
            num(st.generations_per_100_valid()),
            st.kl_estimate.map_or("—".into(), num),
        );
    }
    for t in tables(plan, summary) {
        s += "\n";
        s += &t.markdown();
    }
    let errors: Vec<&Setting> = summary
        .settings
        .iter()
        .filter(|s| s.error.is_some())
        .collect();
    if !errors.is_empty() {
        s += "\n## Errors\n\n";
        for st in errors {
            let _ = writeln!(
                s,
                "- {} on {}: {}",
                st.cell.setting(),
                st.cell.constraint,
                st.error.as_deref().unwrap_or_default()
            );
        }
    }
    if !plots.is_empty() {
        s += "\n## Plots\n\n";
        for (title, file) in plots {
            let _ = writeln!(s, "![{title}]({file})\n");
        }
    }
    s
}

/// The plan's `[[tables]]`, filled from what has finished.
pub fn tables(plan: &Plan, summary: &Summary) -> Vec<Table> {
    plan.tables
        .iter()
        .map(|t| table::fill(t, &plan.cells, &summary.settings))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(entries: Vec<(Vec<TokenId>, f64)>) -> ExactFile {
        let plan = super::super::plan::parse(
            "models = [\"toy:gsk\"]\nsamplers = [\"lcd\"]\nseeds = 1\n[constraints.a]\nregex = \"0\"\n",
            Path::new("."),
        )
        .unwrap();
        ExactFile {
            cell: plan.cells[0].clone(),
            entries,
            error: None,
        }
    }

    /// Two outputs seen 3 and 1 times with P = 0.3 and 0.1 (so P^L ∝ 3:1, q̂ = P^L): the
    /// estimate is −ln C = −ln 0.4, the constant by which it differs from KL(q̂ ‖ P^L) = 0.
    #[test]
    fn the_kl_estimate_is_kl_to_the_target_less_log_of_the_valid_mass() {
        let observed: Observed = [(vec![0], (3.0, 0.3f64.ln())), (vec![1], (1.0, 0.1f64.ln()))]
            .into_iter()
            .collect();
        let k = kl_estimate(&observed).unwrap();
        assert!((k + 0.4f64.ln()).abs() < 1e-12, "{k}");
        // Off the target's proportions it is larger, by KL(q̂ ‖ P^L).
        let skewed: Observed = [(vec![0], (1.0, 0.3f64.ln())), (vec![1], (1.0, 0.1f64.ln()))]
            .into_iter()
            .collect();
        let want = -0.4f64.ln() + 0.5 * (0.5f64 / 0.75).ln() + 0.5 * (0.5f64 / 0.25).ln();
        assert!((kl_estimate(&skewed).unwrap() - want).abs() < 1e-12);
        assert_eq!(kl_estimate(&Observed::new()), None);
    }

    #[test]
    fn distances_are_kl_and_tv_of_the_pooled_weights() {
        let e = exact(vec![(vec![0], 0.5), (vec![1], 0.5)]);
        // q̂ = (3/4, 1/4) from weights 3 and 1.
        let q: Outputs = [(vec![0], 3.0), (vec![1], 1.0)].into_iter().collect();
        let (kl, tv) = distance(&e, &q, 4.0);
        let want = 0.75 * (1.5f64).ln() + 0.25 * (0.5f64).ln();
        assert!(
            (kl - want).abs() < 1e-12 && (tv - 0.25).abs() < 1e-12,
            "{kl} {tv}"
        );
        // A sample outside the language: KL is infinite, TV counts its mass.
        let q: Outputs = [(vec![0], 1.0), (vec![7], 1.0)].into_iter().collect();
        let (kl, tv) = distance(&e, &q, 2.0);
        assert!(kl.is_infinite() && (tv - 0.5).abs() < 1e-12, "{kl} {tv}");
    }
}
