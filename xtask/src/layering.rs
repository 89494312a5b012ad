//! A check of the page's module structure (ARCHITECTURE.md, `app`): no file imports its
//! parent module, and the top-level modules of `app/src` form no cycle. It reads the
//! sources as text (`crate::x` and `super::x` paths), since `app` builds only for wasm32.

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
}
