//! The AFL++ entry point: `strait-fuzz TARGET` runs one target in AFL's persistent mode;
//! `strait-fuzz --seeds DIR` writes the generated seeds (`fuzz::generated_seeds`) under
//! `DIR/<target>/`; `strait-fuzz --list` prints the targets' names. Built and run by
//! `cargo xtask fuzz`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--list" => {
            for t in fuzz::TARGETS {
                println!("{}", t.name);
            }
        }
        [flag, dir] if flag == "--seeds" => {
            for (target, name, bytes) in fuzz::generated_seeds() {
                let d = std::path::Path::new(dir).join(target);
                std::fs::create_dir_all(&d).expect("seed directory");
                std::fs::write(d.join(name), bytes).expect("seed file");
            }
        }
        [name] => {
            let Some(t) = fuzz::target(name) else {
                eprintln!("strait-fuzz: no target {name:?}");
                std::process::exit(2);
            };
            afl::fuzz!(|data: &[u8]| (t.run)(data));
        }
        _ => {
            let names: Vec<&str> = fuzz::TARGETS.iter().map(|t| t.name).collect();
            eprintln!("usage: strait-fuzz TARGET | --seeds DIR   (targets: {names:?})");
            std::process::exit(2);
        }
    }
}
