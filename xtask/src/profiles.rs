//! A check of the root `Cargo.toml`'s dev profile: the dependencies take the profile's
//! own opt-level (2) so that proc macros and build scripts can take `build-override`'s
//! (0), which a `package."*"` override would beat; so each crate of the workspace must be
//! named with its own override (opt-level 1), or it would build at 2 without a word.

#[cfg(test)]
mod tests {
    use crate::util::root;

    /// The quoted strings of `members = [...]` in the root manifest's `[workspace]`.
    fn members(manifest: &str) -> Vec<String> {
        let line = manifest
            .lines()
            .find(|l| l.trim_start().starts_with("members"))
            .expect("the root Cargo.toml names its members on one line");
        line.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    /// The `name = "..."` of a member's `[package]`.
    fn package_name(dir: &str) -> String {
        let text = std::fs::read_to_string(root().join(dir).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{dir}/Cargo.toml: {e}"));
        text.lines()
            .find_map(|l| {
                let (key, value) = l.split_once('=')?;
                (key.trim() == "name").then(|| value.trim().trim_matches('"').to_string())
            })
            .unwrap_or_else(|| panic!("{dir}/Cargo.toml names no package"))
    }

    #[test]
    fn every_workspace_crate_has_its_dev_profile_override() {
        let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
        assert!(
            !manifest.contains("[profile.dev.package.\"*\"]"),
            "a package.\"*\" override would win over build-override"
        );
        let dirs = members(&manifest);
        assert!(dirs.len() > 10, "{dirs:?}");
        for dir in dirs {
            let name = package_name(&dir);
            let table = format!("[profile.dev.package.{name}]\nopt-level = 1\n");
            assert!(
                manifest.contains(&table),
                "Cargo.toml has no `{}` with opt-level 1: crate {name} ({dir}/) would \
                 build at the dependencies' opt-level 2",
                table.lines().next().unwrap()
            );
        }
    }
}
