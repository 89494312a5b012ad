//! Prints the playground core's figures: permalink length per example, and how fast toy
//! runs record events and the views absorb them (what bounds the page's animation).
//!
//! `cargo run --release -p playground --example figures`

use playground::examples::examples;
use playground::permalink::{decode, encode};
use playground::player::Player;
use playground::runner::Run;
use playground::state::PlaygroundState;
use playground::views::{Labels, Views};
use std::time::Instant;

fn main() {
    println!("permalink length per example (characters after '#'):");
    for e in examples() {
        let s = e.state();
        let h = encode(&s);
        let json = serde_json::to_string(&s).unwrap().len();
        let t = Instant::now();
        for _ in 0..100 {
            decode(&h).unwrap();
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / 100.0;
        println!(
            "  {:<16} json {json:>5} B  link {:>5}  decode {us:>7.1} µs",
            e.id,
            h.len()
        );
    }
    println!("toy runs (method, events, run ms, views µs/event):");
    for id in ["toy-gsk", "toy-gsk-gbnf", "toy-random"] {
        let base = playground::examples::example(id).unwrap().state();
        for m in ["lcd", "cars", "asap", "mcmc-uniform", "awrs-smc"] {
            let s = PlaygroundState {
                method: m.into(),
                n: 500,
                ..base.clone()
            };
            let t = Instant::now();
            let run = Run::run_toy(&s).unwrap();
            let run_ms = t.elapsed().as_secs_f64() * 1e3;
            let v = s.model.toy().unwrap().vocabulary();
            let mut views = Views::for_method(Labels::from_vocabulary(&v), run.method());
            let t = Instant::now();
            let n = Player::new(f64::INFINITY).to_end(&run, &mut views);
            let per = t.elapsed().as_secs_f64() * 1e6 / n.max(1) as f64;
            println!("  {id:<13} {m:<13} {n:>7} {run_ms:>8.1} {per:>7.2}");
        }
    }
}
