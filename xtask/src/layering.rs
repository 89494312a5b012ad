//! Checks of the module structure (ARCHITECTURE.md), reading the sources as text
//! (`crate::…` and `super::…` paths, `use` trees included), since `app` builds only for
//! wasm32:
//! - in every crate of the workspace, the modules of one folder (the files and subfolders
//!   side by side) form no import cycle: a module reaches its siblings one way only, so
//!   each folder reads bottom-up. Names re-exported by a `pub use` are followed to the
//!   module that defines them.
//! - in the page (`app`), no file imports its parent module.

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    /// Every `.rs` file under `dir`.
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("app/src is readable") {
            let p = entry.expect("a directory entry").path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }

    /// The identifiers following `prefix` (`crate::` or `super::`) in `code`.
    fn idents_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        code.match_indices(prefix).filter_map(move |(i, _)| {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                return None;
            }
            let rest = &code[i + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
    }

    /// The code of a file without its `#[cfg(test)]` module (whose `super::` is the file).
    fn without_tests(code: &str) -> &str {
        code.find("#[cfg(test)]").map_or(code, |i| &code[..i])
    }

    #[test]
    fn app_modules_import_no_parent_and_form_no_cycle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../app/src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let top: BTreeSet<String> = files
            .iter()
            .map(|f| f.strip_prefix(&src).unwrap().components().next().unwrap())
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .filter(|m| m != "main")
            .collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let rel = f.strip_prefix(&src).unwrap();
            let code = std::fs::read_to_string(f).unwrap();
            let code = without_tests(&code);
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let me = first.trim_end_matches(".rs").to_string();
            for m in idents_after(code, "crate::").filter(|m| top.contains(*m) && **m != me) {
                graph.entry(me.clone()).or_default().insert(m.to_string());
            }
            // A file in a module's folder may use its siblings (`super::sibling`), not
            // what the folder's `mod.rs` defines.
            let nested = rel.components().count() > 1 && rel.file_name().unwrap() != "mod.rs";
            if nested {
                let dir = f.parent().unwrap();
                for name in idents_after(code, "super::") {
                    let sibling = dir.join(format!("{name}.rs")).exists()
                        || dir.join(name).join("mod.rs").exists();
                    assert!(
                        sibling,
                        "{} imports `super::{name}` from its parent module",
                        rel.display()
                    );
                }
            }
        }
        // Depth-first search for a cycle among the top-level modules.
        fn visit<'a>(
            m: &'a str,
            graph: &'a BTreeMap<String, BTreeSet<String>>,
            stack: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) {
            if done.contains(m) {
                return;
            }
            if let Some(i) = stack.iter().position(|s| *s == m) {
                panic!("import cycle: {} → {m}", stack[i..].join(" → "));
            }
            stack.push(m);
            for n in graph.get(m).into_iter().flatten() {
                visit(n, graph, stack, done);
            }
            stack.pop();
            done.insert(m);
        }
        let mut done = BTreeSet::new();
        for m in &top {
            visit(m, &graph, &mut Vec::new(), &mut done);
        }
        // The check sees the page's layers (a sanity check of the parsing itself).
        assert!(graph["page"].contains("loader") && graph["page"].contains("quick_form"));
    }

    /// `code` without its line comments (doc links name modules without importing them).
    fn code_only(code: &str) -> String {
        code.lines()
            .map(|l| match l.find("//") {
                Some(i) if !l[..i].contains('"') => &l[..i],
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A module: its path from the crate root (`[]` for lib.rs / main.rs).
    type ModPath = Vec<String>;

    /// Every module of the crate under `src` with its file.
    fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        files
            .into_iter()
            .filter_map(|f| {
                let rel = f.strip_prefix(src).ok()?.to_path_buf();
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().to_string())
                    .collect();
                let last = parts.pop()?;
                match last.as_str() {
                    "mod.rs" => {}
                    "lib.rs" | "main.rs" if parts.is_empty() => {}
                    // `src/bin/*.rs` are crates of their own.
                    _ if parts.first().is_some_and(|p| p == "bin") => return None,
                    _ => parts.push(last.trim_end_matches(".rs").to_string()),
                }
                Some((parts, f))
            })
            .collect()
    }

    /// The paths of a `use` tree or expression path starting after `prefix` (`crate::`,
    /// `super::`), each as its segments: `crate::{a::{b, c}, d}` gives `a::b`, `a::c`, `d`.
    fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
        fn ident(s: &str) -> (&str, &str) {
            let end = s
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(s.len());
            (&s[..end], &s[end..])
        }
        /// Parses one tree at the start of `s`; appends its paths (under `base`) to `out`.
        fn tree<'a>(s: &'a str, base: &[String], out: &mut Vec<Vec<String>>) -> &'a str {
            let s = s.trim_start();
            if let Some(rest) = s.strip_prefix('{') {
                let mut rest = rest;
                loop {
                    rest = rest.trim_start();
                    if let Some(r) = rest.strip_prefix('}') {
                        return r;
                    }
                    rest = tree(rest, base, out);
                    rest = rest.trim_start();
                    rest = rest.strip_prefix(',').unwrap_or(rest);
                    if rest.is_empty() {
                        return rest;
                    }
                    if !rest.starts_with('}')
                        && !rest.starts_with(|c: char| c == '{' || c.is_alphanumeric() || c == '_')
                    {
                        // Not a use tree after all (`*`, `self as x` …): skip a character.
                        rest = &rest[rest.chars().next().map_or(0, char::len_utf8)..];
                    }
                }
            }
            let (id, rest) = ident(s);
            if id.is_empty() {
                if !base.is_empty() {
                    out.push(base.to_vec());
                }
                return rest;
            }
            let mut path = base.to_vec();
            path.push(id.to_string());
            match rest.strip_prefix("::") {
                Some(r) => tree(r, &path, out),
                None => {
                    out.push(path);
                    rest
                }
            }
        }
        let mut out = Vec::new();
        for (i, _) in code.match_indices(prefix) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            tree(&code[i + prefix.len()..], &[], &mut out);
        }
        out
    }

    /// Absolute paths of what `code` (the file of module `me`) names through `crate::` and
    /// `super::` (the parent module, whether `me` is a file or a folder's `mod.rs`).
    fn named_paths(code: &str, me: &ModPath) -> Vec<Vec<String>> {
        let mut out = paths_after(code, "crate::");
        let parent = me[..me.len().saturating_sub(1)].to_vec();
        for p in paths_after(code, "super::") {
            let mut base = parent.clone();
            let mut rest = p.as_slice();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            out.push(base);
        }
        out
    }

    /// The module a path lands in: its longest module prefix, following one `pub use`
    /// re-export of the next name when there is one.
    fn resolve(
        path: &[String],
        mods: &BTreeMap<ModPath, PathBuf>,
        reexports: &BTreeMap<(ModPath, String), ModPath>,
        depth: usize,
    ) -> Option<ModPath> {
        let k = (0..=path.len())
            .rev()
            .find(|&k| mods.contains_key(&path[..k]))?;
        let m = path[..k].to_vec();
        if depth < 4
            && let Some(name) = path.get(k)
            && let Some(target) = reexports.get(&(m.clone(), name.clone()))
            && target != &m
        {
            let mut next = target.clone();
            next.extend(path[k + 1..].iter().cloned());
            return resolve(&next, mods, reexports, depth + 1).or(Some(target.clone()));
        }
        Some(m)
    }

    /// The children a module declares under `#[cfg(test)]` (`#[cfg(test)] mod tests;`).
    fn test_children(code: &str) -> Vec<String> {
        code.match_indices("#[cfg(test)]")
            .filter_map(|(i, m)| {
                let rest = code[i + m.len()..].trim_start();
                let rest = rest
                    .strip_prefix("pub(crate) ")
                    .or_else(|| rest.strip_prefix("pub "))
                    .unwrap_or(rest);
                let rest = rest.strip_prefix("mod ")?;
                let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
                rest[end..]
                    .starts_with(';')
                    .then(|| rest[..end].to_string())
            })
            .collect()
    }

    /// Sibling import cycles in the crate under `src`, as `folder: a → b → a`. Test-only
    /// modules (declared under `#[cfg(test)]`) are left out: a test may use anything.
    fn sibling_cycles(src: &Path) -> Vec<String> {
        let mut mods = modules(src);
        let tests: Vec<ModPath> = mods
            .iter()
            .flat_map(|(m, f)| {
                let code = std::fs::read_to_string(f).unwrap();
                test_children(&code).into_iter().map(move |c| {
                    let mut p = m.clone();
                    p.push(c);
                    p
                })
            })
            .collect();
        mods.retain(|m, _| !tests.iter().any(|t| m.starts_with(t)));
        let code: BTreeMap<ModPath, String> = mods
            .iter()
            .map(|(m, f)| {
                (
                    m.clone(),
                    code_only(without_tests(&std::fs::read_to_string(f).unwrap())),
                )
            })
            .collect();
        // `pub use path::Name;` in module m: (m, Name) → the module path names.
        let mut reexports: BTreeMap<(ModPath, String), ModPath> = BTreeMap::new();
        for (m, text) in &code {
            for line in text.lines().map(str::trim) {
                let Some(rest) = line
                    .strip_prefix("pub use ")
                    .or_else(|| line.strip_prefix("pub(crate) use "))
                else {
                    continue;
                };
                // Relative to m (a child's name, self::, crate::, super::).
                let (prefix, body) = if let Some(b) = rest.strip_prefix("crate::") {
                    (Vec::new(), b)
                } else if let Some(b) = rest.strip_prefix("self::") {
                    (m.clone(), b)
                } else if let Some(b) = rest.strip_prefix("super::") {
                    (m[..m.len().saturating_sub(1)].to_vec(), b)
                } else {
                    (m.clone(), rest)
                };
                for p in paths_after(&format!("::{body}"), "::") {
                    let mut full = prefix.clone();
                    full.extend(p.iter().cloned());
                    let Some(name) = p.last() else { continue };
                    let k = (0..=full.len())
                        .rev()
                        .find(|&k| mods.contains_key(&full[..k]));
                    if let Some(k) = k
                        && k < full.len()
                    {
                        reexports.insert((m.clone(), name.clone()), full[..k].to_vec());
                    }
                }
            }
        }
        // Edges between siblings: folder → (child → children it reaches).
        let mut graph: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (m, text) in &code {
            for p in named_paths(text, m) {
                let Some(t) = resolve(&p, &mods, &reexports, 0) else {
                    continue;
                };
                let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
                if common < m.len() && common < t.len() {
                    graph
                        .entry(m[..common].to_vec())
                        .or_default()
                        .entry(m[common].clone())
                        .or_default()
                        .insert(t[common].clone());
                }
            }
        }
        let mut cycles = Vec::new();
        for (folder, g) in &graph {
            fn visit<'a>(
                m: &'a str,
                g: &'a BTreeMap<String, BTreeSet<String>>,
                stack: &mut Vec<&'a str>,
                done: &mut BTreeSet<&'a str>,
                found: &mut Vec<String>,
            ) {
                if done.contains(m) {
                    return;
                }
                if let Some(i) = stack.iter().position(|s| *s == m) {
                    found.push(format!("{} → {m}", stack[i..].join(" → ")));
                    return;
                }
                stack.push(m);
                for n in g.get(m).into_iter().flatten() {
                    visit(n, g, stack, done, found);
                }
                stack.pop();
                done.insert(m);
            }
            let mut found = Vec::new();
            let mut done = BTreeSet::new();
            for m in g.keys() {
                visit(m, g, &mut Vec::new(), &mut done, &mut found);
            }
            let name = if folder.is_empty() {
                "src".to_string()
            } else {
                folder.join("::")
            };
            cycles.extend(found.into_iter().map(|c| format!("{name}: {c}")));
        }
        cycles
    }

    #[test]
    fn no_crate_has_an_import_cycle_between_sibling_modules() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut all = Vec::new();
        let mut crates = 0;
        for entry in std::fs::read_dir(&root).unwrap() {
            let dir = entry.unwrap().path();
            let src = dir.join("src");
            if !dir.join("Cargo.toml").exists() || !src.is_dir() {
                continue;
            }
            crates += 1;
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            all.extend(
                sibling_cycles(&src)
                    .into_iter()
                    .map(|c| format!("{name}/{c}")),
            );
        }
        assert!(crates >= 10, "found the workspace's crates ({crates})");
        assert!(
            all.is_empty(),
            "import cycles between sibling modules:\n{}",
            all.join("\n")
        );
    }

    #[test]
    fn the_cycle_check_sees_use_trees_reexports_and_super() {
        let p = paths_after("use crate::{a::{b, c}, d::E};", "crate::");
        assert_eq!(p, vec![vec!["a", "b"], vec!["a", "c"], vec!["d", "E"]]);
        let dir = std::env::temp_dir().join(format!("strait-layering-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("f")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod a; mod f;\npub use a::Thing;\n").unwrap();
        std::fs::write(src.join("a.rs"), "pub struct Thing;\n").unwrap();
        std::fs::write(src.join("f/mod.rs"), "mod x; mod y;\n").unwrap();
        std::fs::write(src.join("f/x.rs"), "use super::y::Y;\n").unwrap();
        std::fs::write(
            src.join("f/y.rs"),
            "pub struct Y;\nfn g() { let _ = super::x::X; }\n",
        )
        .unwrap();
        assert_eq!(sibling_cycles(&src), vec!["f: x → y → x".to_string()]);
        // Through a re-export at the crate root: a → f (f/x names crate::Thing, in a).
        std::fs::write(src.join("f/y.rs"), "pub struct Y;\n").unwrap();
        std::fs::write(src.join("f/x.rs"), "use super::y::Y; use crate::Thing;\n").unwrap();
        std::fs::write(src.join("a.rs"), "pub struct Thing; use crate::f;\n").unwrap();
        assert_eq!(sibling_cycles(&src), vec!["src: a → f → a".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
