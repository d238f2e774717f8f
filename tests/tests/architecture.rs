//! Keeps `docs/ARCHITECTURE.md` true: its crate table is checked against
//! what Cargo resolves, and the rule "only startup names a store" against the
//! server's source.
//!
//! - "depends on" must list exactly a crate's normal and build dependencies,
//!   so adding one without writing it down fails here;
//! - "never on" must not appear anywhere in its dependency tree (dev
//!   dependencies excluded: tests may use anything).
//!
//! Also the shape the workspace keeps: no import circles, store code
//! mostly plain functions (not `macro_rules!` bodies), and files short
//! enough to read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// One row of the table: package name, allowed and forbidden dependencies.
struct Row {
    package: String,
    depends_on: BTreeSet<String>,
    never_on: BTreeSet<String>,
}

/// Every `name` written in backticks in a table cell.
fn ticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn table(doc: &str) -> Vec<Row> {
    doc.lines()
        .filter(|l| l.starts_with("| `crates/") || l.starts_with("| `tests"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // ["", crate, package, depends on, never on, ""]
            assert!(cells.len() >= 6, "malformed table row: {line}");
            let package = cells[2]
                .split('`')
                .nth(1)
                .unwrap_or_else(|| panic!("no package in row: {line}"))
                .to_owned();
            Row {
                package,
                depends_on: ticked(cells[3]),
                never_on: ticked(cells[4]),
            }
        })
        .collect()
}

/// `cargo metadata`, resolved (the dependency tree is needed for "never on").
fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(workspace_root().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// Whether a resolved edge is a normal or build dependency (not dev only).
fn not_dev_only(dep: &Value) -> bool {
    dep["dep_kinds"]
        .as_array()
        .expect("dep_kinds")
        .iter()
        .any(|k| k["kind"].as_str() != Some("dev"))
}

struct Graph {
    /// Package id -> name.
    names: BTreeMap<String, String>,
    /// Package id -> ids of its normal and build dependencies.
    edges: BTreeMap<String, Vec<String>>,
    /// Workspace package name -> id.
    members: BTreeMap<String, String>,
}

fn graph(meta: &Value) -> Graph {
    let packages = meta["packages"].as_array().expect("packages");
    let names = packages
        .iter()
        .map(|p| {
            (
                p["id"].as_str().expect("id").to_owned(),
                p["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect::<BTreeMap<_, _>>();
    let members = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .map(|id| {
            let id = id.as_str().expect("member id").to_owned();
            (names[&id].clone(), id)
        })
        .collect();
    let edges = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve.nodes")
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|d| not_dev_only(d))
                .map(|d| d["pkg"].as_str().expect("pkg").to_owned())
                .collect();
            (node["id"].as_str().expect("node id").to_owned(), deps)
        })
        .collect();
    Graph {
        names,
        edges,
        members,
    }
}

impl Graph {
    fn direct(&self, id: &str) -> BTreeSet<String> {
        self.edges[id]
            .iter()
            .map(|d| self.names[d].clone())
            .collect()
    }

    fn all(&self, id: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![id.to_owned()];
        while let Some(next) = todo.pop() {
            for dep in &self.edges[&next] {
                if seen.insert(dep.clone()) {
                    todo.push(dep.clone());
                }
            }
        }
        seen.into_iter().map(|d| self.names[&d].clone()).collect()
    }
}

#[test]
fn architecture_table_matches_the_resolved_dependencies() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/ARCHITECTURE.md"))
        .expect("read docs/ARCHITECTURE.md");
    let rows = table(&doc);
    let graph = graph(&metadata());

    let documented: BTreeSet<&str> = rows.iter().map(|r| r.package.as_str()).collect();
    let members: BTreeSet<&str> = graph.members.keys().map(String::as_str).collect();
    assert_eq!(
        documented, members,
        "docs/ARCHITECTURE.md's table must have one row per workspace crate"
    );

    let mut problems = Vec::new();
    for row in &rows {
        let id = &graph.members[&row.package];
        let direct = graph.direct(id);
        for extra in direct.difference(&row.depends_on) {
            problems.push(format!(
                "{} depends on `{extra}`, not in its row",
                row.package
            ));
        }
        for missing in row.depends_on.difference(&direct) {
            problems.push(format!(
                "{}'s row lists `{missing}`, which it does not depend on",
                row.package
            ));
        }
        let all = graph.all(id);
        for banned in row.never_on.intersection(&all) {
            problems.push(format!(
                "{} depends (maybe indirectly) on `{banned}`",
                row.package
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md is out of date:\n{}",
        problems.join("\n")
    );
}

/// Only the server's startup code chooses a store; handlers, the CLI and the
/// rest reach storage through the service.
#[test]
fn only_startup_names_a_store() {
    let src = workspace_root().join("crates/server/src");
    let mut offenders = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("startup.rs") {
                let text = std::fs::read_to_string(&path).expect("read source");
                if text.contains("confab_store_") {
                    offenders.push(
                        path.strip_prefix(&src)
                            .unwrap_or(&path)
                            .display()
                            .to_string(),
                    );
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "store named outside startup.rs: {offenders:?}"
    );
}

/// The source files below `dir`, as (module path, text): `a/b.rs` and `a/b/mod.rs` are `a::b`, `lib.rs` and `main.rs`
/// the root `""`.
fn modules(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .expect("below root")
                    .with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                let text = std::fs::read_to_string(&path).expect("read source");
                out.insert(parts.join("::"), text);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Which module imports which: `prefix` paths (`crate::`, or `super::` for
/// the query files, which are siblings under one module) resolved from the
/// root to the longest module they name. With `crate::`, the relative paths
/// are read too: `super::` (as often as it is repeated) from the module's
/// parent, `self::` from the module itself. A module's own children and
/// ancestors do not count: they are one room.
fn imports(mods: &BTreeMap<String, String>, prefix: &str) -> BTreeMap<String, BTreeSet<String>> {
    let relative = prefix == "crate::";
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, text) in mods {
        // Doc links and comments name modules without importing them.
        let code = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let here: Vec<&str> = from.split("::").filter(|p| !p.is_empty()).collect();
        let mut starts = vec![(prefix, Vec::new())];
        if relative {
            starts.push(("super::", here.clone()));
            starts.push(("self::", here.clone()));
        }
        for (start, base) in &starts {
            for (at, _) in code.match_indices(start) {
                if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let mut rest = &code[at + start.len()..];
                let mut base = base.clone();
                if *start == "super::" {
                    // `super::` leaves the module; each further one goes up again.
                    if base.pop().is_none() {
                        continue;
                    }
                    while let Some(after) = rest.strip_prefix("super::") {
                        if base.pop().is_none() {
                            break;
                        }
                        rest = after;
                    }
                }
                let named = rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .next()
                    .unwrap_or_default();
                let path: Vec<&str> = base
                    .iter()
                    .copied()
                    .chain(named.split("::"))
                    .filter(|p| !p.is_empty())
                    .collect();
                let target = (1..=path.len())
                    .rev()
                    .map(|k| path[..k].join("::"))
                    .find(|m| mods.contains_key(m));
                if let Some(to) = target {
                    let related = to == *from
                        || from.starts_with(&format!("{to}::"))
                        || to.starts_with(&format!("{from}::"));
                    if !related {
                        edges.entry(from.clone()).or_default().insert(to);
                    }
                }
            }
        }
    }
    edges
}

/// A circle of imports, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut found = path[i..].to_vec();
            found.push(at.to_owned());
            return Some(found);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_owned());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|start| visit(start, edges, &mut Vec::new(), &mut done))
}

/// No module imports back a module that imports it (a reader
/// knows the room from the folder, and a type two modules need lives below
/// both), in every crate and in the query files both stores compile.
#[test]
fn no_import_circles() {
    let root = workspace_root();
    let mut trees: Vec<(PathBuf, &str)> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| (e.expect("entry").path().join("src"), "crate::"))
        .collect();
    trees.push((root.join("tests/src"), "crate::"));
    trees.push((root.join("crates/store-sql/per-backend/queries"), "super::"));
    for (dir, prefix) in trees {
        if !dir.is_dir() {
            continue;
        }
        let mods = modules(&dir);
        assert!(!mods.is_empty(), "no sources in {}", dir.display());
        if let Some(found) = circle(&imports(&mods, prefix)) {
            panic!(
                "{}: modules import each other: {}",
                dir.display(),
                found.join(" -> ")
            );
        }
    }
}

/// The check above finds a circle where there is one.
#[test]
fn an_import_circle_is_found() {
    let mods: BTreeMap<String, String> = [
        ("a".to_owned(), "use crate::b::Thing;".to_owned()),
        ("b".to_owned(), "fn f() { crate::c::g() }".to_owned()),
        (
            "c".to_owned(),
            "use crate::a;\n// crate::b in a comment".to_owned(),
        ),
        ("a::inner".to_owned(), "use crate::a::X;".to_owned()),
    ]
    .into();
    let found = circle(&imports(&mods, "crate::")).expect("a circle");
    assert_eq!(found.first(), found.last());
    assert_eq!(found.len(), 4, "{found:?}");
    let mut broken = mods.clone();
    broken.insert("c".to_owned(), "// use crate::a;".to_owned());
    assert_eq!(circle(&imports(&broken, "crate::")), None);
}

/// `super::` and `self::` paths are read from where they stand.
#[test]
fn relative_imports_are_read() {
    let mods: BTreeMap<String, String> = [
        ("r".to_owned(), "mod a; mod b; use self::a::X;".to_owned()),
        ("r::a".to_owned(), "use super::b::Thing;".to_owned()),
        (
            "r::b".to_owned(),
            "use super::super::c::{self, D};".to_owned(),
        ),
        ("c".to_owned(), "fn f() { crate::r::a::g() }".to_owned()),
    ]
    .into();
    let edges = imports(&mods, "crate::");
    assert_eq!(edges["r::a"], ["r::b".to_owned()].into());
    assert_eq!(edges["r::b"], ["c".to_owned()].into());
    assert!(
        !edges.contains_key("r"),
        "a module's own children are its room"
    );
    let found = circle(&edges).expect("a circle through relative paths");
    assert_eq!(found.len(), 4, "{found:?}");
}

/// Lines inside `macro_rules!` bodies, and all lines, of the `.rs` files
/// below `dir`.
fn macro_lines(dir: &Path) -> (usize, usize) {
    let (mut inside, mut total) = (0, 0);
    for text in modules(dir).values() {
        let lines: Vec<&str> = text.lines().collect();
        total += lines.len();
        let mut i = 0;
        while i < lines.len() {
            if !lines[i].trim_start().starts_with("macro_rules!") {
                i += 1;
                continue;
            }
            // The body ends where its braces balance again.
            let mut depth = 0_i64;
            let mut opened = false;
            let start = i;
            while i < lines.len() {
                for c in lines[i].chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                i += 1;
                if opened && depth <= 0 {
                    break;
                }
            }
            inside += i - start;
        }
    }
    (inside, total)
}

/// Store code is plain functions and types a reader can follow:
/// at most 15 % of the store crates' lines are `macro_rules!` bodies.
#[test]
fn store_code_is_not_macro_bodies() {
    let root = workspace_root();
    let (mut inside, mut total) = (0, 0);
    for dir in [
        "crates/store-sql",
        "crates/store-postgres",
        "crates/store-sqlite",
    ] {
        let (i, t) = macro_lines(&root.join(dir));
        inside += i;
        total += t;
    }
    assert!(total > 5_000, "the store crates' sources were not found");
    let share = inside as f64 / total as f64;
    assert!(
        share <= 0.15,
        "{inside} of {total} store lines ({:.1} %) are macro_rules! bodies",
        share * 100.0
    );
}

/// Whether a file below `crates/` or `tests/` holds tests only: in a
/// `tests` folder (integration tests and their support), or a module named
/// `tests` or `*_tests` (a unit test module in a file of its own).
fn is_test_file(rel: &Path) -> bool {
    rel.components().any(|c| c.as_os_str() == "tests")
        || rel
            .file_stem()
            .is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"))
}

/// Files a reader can take in: no source file over 800 lines,
/// no test file over 1,000, counting every line of the file.
#[test]
fn no_file_is_too_long_to_read() {
    let root = workspace_root();
    let mut long = Vec::new();
    let mut seen = 0;
    for dir in ["crates", "tests"] {
        let mut stack = vec![root.join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                seen += 1;
                let rel = path.strip_prefix(&root).expect("below root").to_path_buf();
                let lines = std::fs::read_to_string(&path)
                    .expect("read source")
                    .lines()
                    .count();
                let most = if is_test_file(&rel) { 1_000 } else { 800 };
                if lines > most {
                    long.push(format!("{} ({lines} lines, at most {most})", rel.display()));
                }
            }
        }
    }
    assert!(seen > 100, "the workspace's sources were not found");
    assert!(long.is_empty(), "files too long: {long:#?}");
}

#[test]
fn test_files_are_told_from_source_files() {
    assert!(is_test_file(Path::new("tests/tests/http/admin.rs")));
    assert!(is_test_file(Path::new("crates/domain/tests/proptest.rs")));
    assert!(is_test_file(Path::new(
        "crates/domain/src/message/tests.rs"
    )));
    assert!(is_test_file(Path::new("crates/http/src/wire_tests.rs")));
    assert!(!is_test_file(Path::new("crates/domain/src/message.rs")));
    assert!(!is_test_file(Path::new("crates/http/src/requests/mod.rs")));
}
