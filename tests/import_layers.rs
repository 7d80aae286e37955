//! No import circle: between the crate's top-level modules (`record`, `finders`, `audit`,
//! `report`, …), and between the files of one module. A circle makes every file in it depend on
//! every other, so the record (a leaf the modes fill) could not be read, tested or changed alone.
//!
//! The imports are read from the source text: every `crate::a::…` path, and inside a module its
//! files' `super::…` paths (a name `mod.rs` re-exports from one of the files counts as that
//! file's), outside comments and `#[cfg(test)]` modules (tests may reach anywhere). A module's
//! `mod.rs` owns its files: declaring, re-exporting and calling them (`mod x;`, `pub use x::…`,
//! `x::f()`) is not an import; a `use x::…;` for its own code is. This is a reading of the text, not of the compiler's name resolution, so it
//! can miss an import made through a glob or a re-export; it cannot invent one. Written by hand:
//! no maintained crate parses a Rust tree into a module graph without building it (syn would
//! parse a file, not resolve its paths).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without comments, string contents of doc comments, and test modules.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            // The test module (or item) that follows, up to the end of its block.
            let mut depth = 0i64;
            let mut opened = false;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                opened |= l.contains('{');
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        let code = match t.find("//") {
            Some(i) => &t[..i],
            None => t,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// `name::` paths after `prefix` (e.g. "crate::") in `code`: the first identifier after it.
fn paths_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + prefix.len()..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if end > 0 {
            found.push(&after[..end]);
        }
    }
    found
}

/// A circle in `edges`, if any, as the nodes along it.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut c = stack[start..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

struct SourceFile {
    /// Path below src/, e.g. "record/result.rs".
    rel: String,
    /// Top-level module, e.g. "record" ("gate" for src/gate.rs).
    top: String,
    code: String,
}

/// The workspace's crates, each by its source folder, lowest layer first: accounting below
/// mechanisms below dp-audit (held to that order by [`crates_keep_their_layers`]).
const CRATE_SOURCES: &[&str] = &["accounting/src", "mechanisms/src", "src"];

fn sources(crate_src: &str) -> Vec<SourceFile> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(crate_src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&src)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "lib.rs" || rel.starts_with("bin/") {
                return None;
            }
            let top = rel.split('/').next()?.trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&p).ok()?;
            Some(SourceFile {
                rel,
                top,
                code: code_of(&text),
            })
        })
        .collect()
}

/// Top-level modules this crate defines (the others after `crate::` are re-exports such as
/// `crate::mechanisms`, the catalogue crate below everything).
fn top_modules(files: &[SourceFile]) -> BTreeSet<String> {
    files.iter().map(|f| f.top.clone()).collect()
}

/// The names `src/{dir}/mod.rs` re-exports (`pub use x::{A, B};`, `pub(crate) use …`): to the
/// file `x` of the module when it is one of them, else `None` (from elsewhere in the crate).
fn reexports_of(files: &[SourceFile], dir: &str) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let Some(m) = files.iter().find(|f| f.rel == format!("{dir}/mod.rs")) else {
        return out;
    };
    let names: BTreeSet<String> = files
        .iter()
        .filter_map(|f| f.rel.strip_prefix(&format!("{dir}/")))
        .map(|r| r.trim_end_matches(".rs").to_string())
        .collect();
    // Statements may span lines: join each `use` up to its `;`.
    let mut statements = Vec::new();
    let mut current = String::new();
    for l in m.code.lines() {
        let t = l.trim();
        if current.is_empty() && !(t.starts_with("pub use ") || t.starts_with("pub(crate) use ")) {
            continue;
        }
        current.push_str(t);
        current.push(' ');
        if t.ends_with(';') {
            statements.push(std::mem::take(&mut current));
        }
    }
    for s in statements {
        let path = s
            .trim_start_matches("pub(crate) use ")
            .trim_start_matches("pub use ")
            .trim_end()
            .trim_end_matches(';');
        let (head, items) = match path.find('{') {
            Some(i) => (&path[..i], path[i + 1..].trim_end_matches('}')),
            None => match path.rfind("::") {
                Some(i) => (&path[..i + 2], &path[i + 2..]),
                None => continue,
            },
        };
        let first = head.split("::").next().unwrap_or("");
        let file = names.contains(first).then(|| first.to_string());
        for item in items.split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item).trim();
            if !name.is_empty() && name != "*" {
                out.insert(name.to_string(), file.clone());
            }
        }
    }
    out
}

/// Each crate of the workspace depends only on the crates below it: accounting on none of them,
/// mechanisms on accounting, dp-audit on both, the Python extension on dp-audit (cargo forbids a
/// circle between crates; this holds the order).
#[test]
fn crates_keep_their_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The workspace crates a manifest depends on: its `name = { path = … }` lines.
    let deps = |manifest: &str| -> BTreeSet<String> {
        let text = std::fs::read_to_string(root.join(manifest)).expect("a manifest");
        text.lines()
            .filter(|l| l.contains("path =") && l.contains('{'))
            .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim().to_string()))
            .filter(|name| name.starts_with("dp-audit"))
            .collect()
    };
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        deps("accounting/Cargo.toml"),
        set(&[]),
        "accounting depends on no other crate of the workspace"
    );
    assert_eq!(
        deps("mechanisms/Cargo.toml"),
        set(&["dp-audit-accounting"]),
        "mechanisms sits on accounting only"
    );
    assert_eq!(
        deps("Cargo.toml"),
        set(&["dp-audit-accounting", "dp-audit-mechanisms"]),
        "dp-audit sits on mechanisms and accounting"
    );
    assert_eq!(
        deps("python/Cargo.toml"),
        set(&["dp-audit"]),
        "the Python extension is built on dp-audit"
    );
}

#[test]
fn no_circle_between_top_level_modules() {
    for crate_src in CRATE_SOURCES {
        no_circle_between_top_level_modules_of(crate_src);
    }
}

fn no_circle_between_top_level_modules_of(crate_src: &str) {
    let files = sources(crate_src);
    let tops = top_modules(&files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        for p in paths_after(&f.code, "crate::") {
            if p != f.top && tops.contains(p) {
                edges
                    .entry(f.top.clone())
                    .or_default()
                    .insert(p.to_string());
            }
        }
    }
    assert!(
        edges.get("record").is_none_or(|e| e
            .iter()
            .all(|m| ["error", "testers", "bounds", "rng"].contains(&m.as_str()))),
        "the record is a leaf the modes fill; it imports {:?}",
        edges.get("record")
    );
    if let Some(c) = find_circle(&edges) {
        panic!(
            "import circle between top-level modules of {crate_src}: {}",
            c.join(" → ")
        );
    }
}

#[test]
fn no_circle_between_the_files_of_a_module() {
    let mut checked = 0;
    for crate_src in CRATE_SOURCES {
        checked += no_circle_between_the_files_of_a_module_of(crate_src);
    }
    assert!(checked >= 8, "only {checked} directory modules found");
}

/// The check of [`no_circle_between_the_files_of_a_module`] in one crate; the modules checked.
fn no_circle_between_the_files_of_a_module_of(crate_src: &str) -> usize {
    let files = sources(crate_src);
    // Files of each directory module: "record" → {"mod", "result", …}.
    let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        if let Some((dir, file)) = f.rel.split_once('/') {
            members
                .entry(dir.to_string())
                .or_default()
                .insert(file.trim_end_matches(".rs").to_string());
        }
    }
    let mut checked = 0;
    for (dir, names) in &members {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in files
            .iter()
            .filter(|f| &f.top == dir && f.rel.contains('/'))
        {
            let me = f
                .rel
                .split_once('/')
                .map(|(_, x)| x.trim_end_matches(".rs").to_string())
                .unwrap_or_default();
            // mod.rs declaring and re-exporting its files is not an import.
            let code: String = f
                .code
                .lines()
                .filter(|l| {
                    let t = l.trim_start();
                    !(me == "mod"
                        && (t.starts_with("pub use ")
                            || t.starts_with("pub(crate) use ")
                            || t.starts_with("mod ")
                            || t.starts_with("pub mod ")))
                })
                .collect::<Vec<_>>()
                .join("\n");
            let mut targets = BTreeSet::new();
            let own = format!("crate::{dir}::");
            let reexports = reexports_of(&files, dir);
            let prefixes: Vec<&str> = if me == "mod" {
                vec![own.as_str(), "self::"]
            } else {
                vec![own.as_str(), "super::"]
            };
            for prefix in prefixes {
                for p in paths_after(&code, prefix) {
                    let target = if names.contains(p) && p != "mod" {
                        p.to_string()
                    } else {
                        match reexports.get(p) {
                            // Re-exported by mod.rs from one of its files, or from elsewhere.
                            Some(Some(file)) => file.clone(),
                            Some(None) => continue,
                            // Defined in mod.rs.
                            None => "mod".to_string(),
                        }
                    };
                    if target != me {
                        targets.insert(target);
                    }
                }
            }
            if me == "mod" {
                // mod.rs importing a file's items for its own code: `use file::item;`.
                for l in code.lines().map(str::trim_start) {
                    if let Some(p) = l.strip_prefix("use ") {
                        let first = p.split("::").next().unwrap_or("");
                        if names.contains(first) && first != "mod" {
                            targets.insert(first.to_string());
                        }
                    }
                }
            }
            edges.insert(me, targets);
        }
        checked += 1;
        if let Some(c) = find_circle(&edges) {
            panic!(
                "import circle between the files of {crate_src}/{dir}/: {}",
                c.iter()
                    .map(|n| format!("{n}.rs"))
                    .collect::<Vec<_>>()
                    .join(" → ")
            );
        }
    }
    checked
}

#[test]
fn the_reader_finds_a_circle_when_there_is_one() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges
        .entry("record".into())
        .or_default()
        .insert("finders".into());
    edges
        .entry("finders".into())
        .or_default()
        .insert("audit".into());
    assert_eq!(find_circle(&edges), None);
    edges
        .entry("audit".into())
        .or_default()
        .insert("record".into());
    let c = find_circle(&edges).expect("the circle record → finders → audit → record");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    let code = code_of(
        "use crate::finders::SearchReport; // crate::audit in a comment\n#[cfg(test)]\nmod tests {\n    use crate::run::x;\n}\nfn f() { crate::report::g(); }\n",
    );
    assert_eq!(paths_after(&code, "crate::"), vec!["finders", "report"]);
}
