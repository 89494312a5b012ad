//! JSON lines the page offers for download: samples (the command line's `sample` shape)
//! and events (the command line's `--events` shape).

use crate::runner::RecordedEvent;
use crate::views::Labels;
use sampler_core::samplers::Sample;
use serde_json::json;

/// One JSON object per sample: `text`, `tokens`, `logp`, `valid`, `weight`, `run`,
/// `lm_calls`, `forward_tokens`, `constraint_checks` (counters cumulative for the run).
pub fn samples_jsonl(samples: &[Sample], labels: &Labels) -> String {
    let mut out = String::new();
    for s in samples {
        let line = json!({
            "text": labels.text(&s.tokens),
            "tokens": s.tokens,
            "logp": s.logp,
            "valid": s.valid,
            "weight": s.weight,
            "run": s.run,
            "lm_calls": s.counters.lm_calls,
            "forward_tokens": s.counters.forward_tokens,
            "constraint_checks": s.counters.constraint_checks,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// One JSON object per sequence of the exact target, as `strait enumerate` prints them:
/// `text`, `tokens`, `logp`, `p` (P^L, summing to 1), most probable first.
pub fn exact_jsonl(exact: &sampler_core::exact::ExactDistribution, labels: &Labels) -> String {
    let mut out = String::new();
    for e in &exact.entries {
        let line = json!({
            "text": labels.text(&e.tokens),
            "tokens": e.tokens,
            "logp": e.logp,
            "p": e.p,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// One JSON object per event, tagged by `type` (`token`, `trie_insert`, `mcmc_proposal`, …).
pub fn events_jsonl(events: &[RecordedEvent]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&serde_json::to_string(&e.event).expect("events serialize"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::Event;
    use sampler_core::samplers::Counters;

    #[test]
    fn lines_parse_back_with_the_fields() {
        let labels = Labels::new(2, |t| if t == 0 { "0".into() } else { "1".into() });
        let s = Sample {
            tokens: vec![1, 0, 2],
            logp: -1.5,
            valid: true,
            weight: Some(0.25),
            run: Some(3),
            counters: Counters {
                lm_calls: 7,
                forward_tokens: 0,
                constraint_checks: 9,
                generations: 1,
            },
        };
        let text = samples_jsonl(&[s.clone(), s], &labels);
        assert_eq!(text.lines().count(), 2);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(v["text"], "10");
        assert_eq!(v["tokens"], json!([1, 0, 2]));
        assert_eq!(v["lm_calls"], 7);
        assert_eq!(v["weight"], 0.25);
        let e = RecordedEvent {
            event: Event::Note {
                message: "<script>\n".into(),
            },
            counters: None,
        };
        let text = events_jsonl(&[e]);
        assert_eq!(text.lines().count(), 1);
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["type"], "note");
        assert_eq!(v["message"], "<script>\n");
    }

    #[test]
    fn exact_lines_sum_to_one() {
        use crate::constraint::build_constraint;
        use crate::exact::{ExactLimits, ground_truth_ready};
        use crate::state::ToyModel;
        use crate::toy::{GSK_REGEX, build};
        let (mut lm, v) = build(ToyModel::Gsk);
        let c = build_constraint(crate::detect::GrammarKind::Regex, GSK_REGEX, &v).unwrap();
        let d = ground_truth_ready(&mut lm, &c, ExactLimits::toy(8)).unwrap();
        let text = exact_jsonl(&d, &Labels::from_vocabulary(&v));
        let rows: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 17);
        let total: f64 = rows.iter().map(|r| r["p"].as_f64().unwrap()).sum();
        assert!((total - 1.0).abs() < 1e-12);
        assert_eq!(rows[0]["text"], "11111");
    }
}
