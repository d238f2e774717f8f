//! Keeps `docs/ARCHITECTURE.md` true: its crate table is checked against
//! what Cargo resolves, and the rule "only startup names a store" against the
//! server's source.
//!
//! - "depends on" must list exactly a crate's normal and build dependencies,
//!   so adding one without writing it down fails here;
//! - "never on" must not appear anywhere in its dependency tree (dev
//!   dependencies excluded: tests may use anything).

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
