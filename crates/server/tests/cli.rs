//! The operator's CLI, run as the real `confab` binary: the exact forms and
//! outputs that scripts rely on, a revocation seen by a running server, and
//! the commands other than `serve` and `migrate` refusing to run on a
//! database with pending migrations.

mod binary;

use binary::{free_port, Server, BIN};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

fn confab(db: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", db)
        .env_remove("CONFAB_LISTEN")
        .output()
        .expect("run confab")
}

/// A migrated SQLite file in `dir` (only `migrate` and `serve` make one).
fn migrated(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("c.db");
    let out = confab(&db, &["migrate"]);
    assert!(out.status.success(), "migrate: {}", stderr(&out));
    db
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// `GET path` with a bearer token over a plain socket; returns the status.
fn get_status(port: u16, path: &str, token: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    s.read_to_string(&mut response).expect("read");
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("status line")
}

fn serve(db: &Path, port: u16) -> Server {
    let child = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", db)
        .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !binary::accepts(port) {
        assert!(Instant::now() < deadline, "confab serve did not listen");
        sleep(Duration::from_millis(50));
    }
    server
}

#[test]
fn contact_create_prints_the_contact_as_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = migrated(dir.path());
    let out = confab(
        &db,
        &[
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100",
            "--avatar-url",
            "https://img.example/a.png",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON on stdout");
    assert_eq!(v["username"], "alice");
    assert_eq!(v["phone_number"], "+15550100");
    assert_eq!(v["avatar_url"], "https://img.example/a.png");
    assert_eq!(v["id"].as_str().map(str::len), Some(36));
    assert!(v["created_at"].is_i64());
    assert_eq!(v["last_active_at"], v["created_at"]);

    // Without --avatar-url the avatar is an empty string, never null.
    let out = confab(
        &db,
        &[
            "contact",
            "create",
            "--username",
            "bob",
            "--phone-number",
            "+15550101",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(v["avatar_url"], "");
}

#[test]
fn duplicate_username_in_any_case_is_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = migrated(dir.path());
    let args = |name: &'static str| {
        [
            "contact",
            "create",
            "--username",
            name,
            "--phone-number",
            "+15550100",
        ]
    };
    assert!(confab(&db, &args("alice")).status.success());
    let out = confab(&db, &args("ALICE"));
    assert!(!out.status.success());
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("ALICE is taken"),
        "stderr: {}",
        stderr(&out)
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = migrated(dir.path());
    let out = confab(
        &db,
        &[
            "contact",
            "create",
            "--username",
            "a b",
            "--phone-number",
            "+15550100",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("username"),
        "stderr: {}",
        stderr(&out)
    );

    let out = confab(&db, &["token", "issue", "--username", "nobody"]);
    assert!(!out.status.success());
    assert!(stdout(&out).is_empty());

    let out = Command::new(BIN)
        .arg("migrate")
        .env("DATABASE_URL", "mysql://localhost/x")
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("DATABASE_URL"),
        "stderr: {}",
        stderr(&out)
    );
}

#[test]
fn token_issue_prints_the_token_alone_and_revoke_takes_effect_on_a_running_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = migrated(dir.path());
    assert!(confab(&db, &["migrate"]).status.success());
    let created = confab(
        &db,
        &[
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100",
        ],
    );
    assert!(created.status.success(), "stderr: {}", stderr(&created));

    let out = confab(
        &db,
        &[
            "token",
            "issue",
            "--username",
            "alice",
            "--expires-in",
            "30d",
        ],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let printed = stdout(&out);
    let token = printed.trim_end_matches('\n');
    assert!(
        !token.contains(char::is_whitespace),
        "only the token: {printed:?}"
    );
    assert!(token.len() >= 32, "at least 128 bits: {token}");

    let port = free_port();
    let _server = serve(&db, port);
    assert_eq!(get_status(port, "/healthz", ""), 200);
    assert_eq!(get_status(port, "/v1/contacts/me", token), 200);

    let out = confab(&db, &["token", "revoke", "--username", "alice"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // The contract allows 5 s; this server checks every request.
    let deadline = Instant::now() + Duration::from_secs(5);
    while get_status(port, "/v1/contacts/me", token) != 401 {
        assert!(
            Instant::now() < deadline,
            "revoked token still accepted after 5 s"
        );
        sleep(Duration::from_millis(100));
    }

    let out = confab(
        &db,
        &[
            "token",
            "issue",
            "--username",
            "alice",
            "--expires-in",
            "soon",
        ],
    );
    assert!(!out.status.success());
}

/// docs/api.md "Requests and answers": without `DATABASE_URL`, a one-shot command does not
/// create an empty `confab.db` where there is none (it refuses, naming the
/// variable); `migrate` says which migrations it applied.
#[test]
fn the_cli_never_guesses_a_database_and_migrate_says_what_it_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["token", "issue", "--username", "alice"][..],
        &[
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100",
        ][..],
        &["key", "list"][..],
    ] {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .env_remove("DATABASE_URL")
            .env_remove("CONFAB_LISTEN")
            .output()
            .expect("run confab");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("DATABASE_URL") && stderr(&out).contains("confab.db"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(
            !dir.path().join("confab.db").exists(),
            "{args:?} made a database"
        );
    }
    // `migrate` makes it (as `serve` does), and says what it applied; the
    // other commands then use it.
    let out = Command::new(BIN)
        .arg("migrate")
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .env_remove("CONFAB_LISTEN")
        .output()
        .expect("run confab");
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.lines()
            .filter(|l| l.starts_with("applied migration "))
            .count()
            >= 10,
        "{said}"
    );
    assert!(said.contains("migrations are up to date"), "{said}");
    let again = Command::new(BIN)
        .arg("migrate")
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .env_remove("CONFAB_LISTEN")
        .output()
        .expect("run confab");
    assert!(
        !stderr(&again).contains("applied migration "),
        "{}",
        stderr(&again)
    );
    let out = Command::new(BIN)
        .args(["key", "list"])
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .env_remove("CONFAB_LISTEN")
        .output()
        .expect("run confab");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "[]");
}

/// Each command's `--help` lists its own options and the ones every command
/// takes (the database, logging), never `serve`'s; `serve --help` and
/// `confab --help` (serve is the default) list `serve`'s.
#[test]
fn each_command_s_help_lists_only_its_own_options() {
    let help = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .arg("--help")
            .env_remove("DATABASE_URL")
            .output()
            .expect("run");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let common = [
        "DATABASE_URL",
        "CONFAB_DB_POOLER",
        "CONFAB_LISTEN_DATABASE_URL",
        "RUST_LOG",
    ];
    let serve_only = [
        "CONFAB_LISTEN]",
        "CONFAB_RATE_LIMIT_PER_SECOND",
        "CONFAB_CORS_ORIGINS",
        "CONFAB_DB_POOL_SIZE",
        "CONFAB_MAX_CONNECTIONS",
        "CONFAB_TRUSTED_PROXIES",
    ];
    for args in [
        &["contact", "create"][..],
        &["token", "issue"][..],
        &["token", "revoke"][..],
        &["key", "create"][..],
        &["key", "list"][..],
        &["webhook", "create"][..],
        &["webhook", "list"][..],
        &["migrate"][..],
    ] {
        let text = help(args);
        for var in common {
            assert!(
                text.contains(&format!("[env: {var}")),
                "{args:?} lacks {var}:\n{text}"
            );
        }
        for var in serve_only {
            let var = var.trim_end_matches(']');
            assert!(
                !text.contains(&format!("[env: {var}]"))
                    && !text.contains(&format!("[env: {var}=")),
                "{args:?} lists serve's {var}:\n{text}"
            );
        }
        let options = text.matches("[env: ").count();
        assert!(
            options <= common.len() + 2,
            "{args:?}: {options} options:\n{text}"
        );
    }
    assert!(help(&["migrate"]).contains("CONFAB_DB_WAIT_SECS"));
    assert!(help(&["webhook", "create"]).contains("CONFAB_WEBHOOK_ALLOW_PRIVATE"));
    for args in [&[][..], &["serve"][..]] {
        let text = help(args);
        for var in serve_only.iter().chain(&common) {
            let var = var.trim_end_matches(']');
            assert!(
                text.contains(&format!("[env: {var}")),
                "{args:?} lacks {var}"
            );
        }
    }
}

/// `serve`'s options go after `serve`: before a command (or with another)
/// they are refused, naming the option, rather than silently ignored.
#[test]
fn serve_options_before_a_command_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = migrated(dir.path());
    let out = confab(&db, &["--rate-limit-burst", "5", "key", "list"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--rate-limit-burst is an option of serve"),
        "{}",
        stderr(&out)
    );
    // From the environment they are read whatever the command.
    let out = Command::new(BIN)
        .args(["key", "list"])
        .env("DATABASE_URL", &db)
        .env("CONFAB_RATE_LIMIT_BURST", "5")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The commands that do not change the schema, with arguments that would
/// succeed on a migrated database.
const READ_ONLY: [&[&str]; 5] = [
    &["token", "issue", "--username", "alice"],
    &[
        "contact",
        "create",
        "--username",
        "alice",
        "--phone-number",
        "+15550100",
    ],
    &["key", "list"],
    &["webhook", "list"],
    &["token", "revoke", "--username", "alice"],
];

/// SQL that undoes the last of `store`'s migrations (its `down.sql`) and
/// forgets it ran.
fn undo_last(store: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(store);
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("migrations")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    let last = dirs.last().expect("a migration");
    let down = std::fs::read_to_string(last.join("down.sql")).expect("down.sql");
    format!(
        "BEGIN; {down}; DELETE FROM __diesel_schema_migrations \
         WHERE version = (SELECT max(version) FROM __diesel_schema_migrations); COMMIT;"
    )
}

/// Asserts that `out` is the refusal of a command on a database with
/// `pending` pending migrations.
fn refused_as_pending(args: &[&str], out: &Output, pending: &str) {
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(out));
    assert!(stdout(out).is_empty(), "{args:?}: {}", stdout(out));
    let said = stderr(out);
    assert!(
        said.starts_with("error: ")
            && said.contains(pending)
            && said.contains("run `confab migrate` first"),
        "{args:?}: {said}"
    );
}

/// Only `serve` and `migrate` change the schema: on a new SQLite path the
/// other commands make no file, and on a file with a migration pending
/// they refuse, naming it, and change nothing; once migrated they work.
#[test]
fn sqlite_commands_other_than_serve_and_migrate_never_migrate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("new.db");
    for args in READ_ONLY {
        let out = confab(&db, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("run `confab migrate` first"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!db.exists(), "{args:?} made the database");
    }
    let db = migrated(dir.path());
    // The last migration undone: as if this binary were newer.
    {
        use diesel::connection::SimpleConnection as _;
        use diesel::Connection as _;
        let mut conn =
            diesel::SqliteConnection::establish(db.to_str().expect("utf-8")).expect("open");
        conn.batch_execute(&undo_last("sqlite")).expect("undo");
    }
    for args in READ_ONLY {
        refused_as_pending(args, &confab(&db, args), "1 migration is pending (");
    }
    let out = confab(&db, &["migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("(1 applied now)"), "{}", stderr(&out));
    let out = confab(&db, READ_ONLY[1]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// psql on the shared test server; its output.
fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-Atqc", sql])
        .output()
        .expect("psql");
    assert!(out.status.success(), "{sql}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// An empty database of its own on the shared PostgreSQL, dropped after.
struct EmptyPg(String);

impl EmptyPg {
    const ADMIN: &'static str = "postgres://postgres@127.0.0.1:5432/postgres";

    fn new() -> Self {
        let name = format!("confab_cli_{}", uuid::Uuid::now_v7().simple());
        psql(Self::ADMIN, &format!("CREATE DATABASE {name}"));
        Self(name)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:5432/{}", self.0)
    }
}

impl Drop for EmptyPg {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args([
                Self::ADMIN,
                "-qc",
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.0),
            ])
            .output();
    }
}

fn confab_pg(url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", url)
        .env_remove("CONFAB_LISTEN")
        .env_remove("CONFAB_DB_POOLER")
        .env_remove("CONFAB_LISTEN_DATABASE_URL")
        .output()
        .expect("run confab")
}

/// The same on PostgreSQL: on an empty database the other commands refuse
/// (every migration pending) and make no table; with one pending they
/// refuse naming it; `migrate` applies it, under a lock no session keeps.
#[test]
fn postgres_commands_other_than_serve_and_migrate_never_migrate() {
    let db = EmptyPg::new();
    let url = db.url();
    for args in READ_ONLY {
        refused_as_pending(args, &confab_pg(&url, args), " migrations are pending (");
    }
    assert_eq!(
        psql(
            &url,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "0"
    );
    let out = confab_pg(&url, &["migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    psql(&url, &undo_last("postgres"));
    for args in READ_ONLY {
        refused_as_pending(args, &confab_pg(&url, args), "1 migration is pending (");
    }
    let out = confab_pg(&url, &["migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("(1 applied now)"), "{}", stderr(&out));
    assert_eq!(
        psql(
            &url,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ),
        "0",
        "a session kept an advisory lock"
    );
    let out = confab_pg(&url, READ_ONLY[1]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Each command's connections name it (`application_name`), so that a
/// session holding the migration lock, or any other, can be told apart;
/// a name the URL gives is kept.
#[test]
fn postgres_connections_name_their_command() {
    let db = EmptyPg::new();
    let url = db.url();
    assert!(confab_pg(&url, &["migrate"]).status.success());
    let port = free_port();
    let child = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", &url)
        .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let _server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !binary::accepts(port) {
        assert!(Instant::now() < deadline, "confab serve did not listen");
        sleep(Duration::from_millis(50));
    }
    let names = psql(
        &url,
        &format!(
            "SELECT string_agg(DISTINCT application_name, ',' ORDER BY application_name) \
             FROM pg_stat_activity WHERE datname = '{}'",
            db.0
        ),
    );
    assert!(names.split(',').any(|n| n == "confab serve"), "{names}");
    let named = format!("{url}?application_name=mine");
    let out = confab_pg(&named, &["key", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
