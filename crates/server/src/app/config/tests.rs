use super::*;

fn db(v: Option<&str>) -> Database {
    Database::from_env_value(v).expect("valid")
}

#[test]
fn database_values() {
    assert_eq!(db(None), Database::Sqlite("confab.db".into()));
    assert_eq!(
        db(Some("sqlite:///tmp/x.db")),
        Database::Sqlite("/tmp/x.db".into())
    );
    assert_eq!(db(Some("sqlite://x.db")), Database::Sqlite("x.db".into()));
    assert_eq!(db(Some("sqlite:x.db")), Database::Sqlite("x.db".into()));
    assert_eq!(db(Some("/tmp/x.db")), Database::Sqlite("/tmp/x.db".into()));
    assert_eq!(
        db(Some("./data/x.db")),
        Database::Sqlite("./data/x.db".into())
    );
    let pg = "postgres://u:secret@localhost/db";
    assert_eq!(db(Some(pg)), Database::Postgres(pg.into()));
    assert!(matches!(
        db(Some("postgresql://localhost/db")),
        Database::Postgres(_)
    ));
    assert!(!format!("{:?}", db(Some(pg))).contains("secret"));
    for bad in ["mysql://x", "http://x", "", "  ", "sqlite:", "sqlite://"] {
        let e = Database::from_env_value(Some(bad)).expect_err(bad);
        assert!(e.to_string().contains("DATABASE_URL"), "{bad}: {e}");
    }
}

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    settings: Settings,
}

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    let mut argv = vec!["confab"];
    argv.extend_from_slice(args);
    <Cli as clap::Parser>::try_parse_from(argv)
}

fn settings(args: &[&str]) -> Result<Settings, clap::Error> {
    parse(args).map(|c| c.settings)
}

fn common(args: &[&str]) -> Result<Common, clap::Error> {
    parse(args).map(|c| c.common)
}

#[test]
fn the_pooler_and_the_direct_url() {
    let c = common(&[]).expect("defaults");
    assert_eq!(c.db_pooler, Pooler::None);
    assert!(c.listen_database_url.is_none());
    let pg = "postgres://u:secret@127.0.0.1:6432/db";
    let c = common(&[
        "--database-url",
        pg,
        "--db-pooler",
        " Transaction ",
        "--listen-database-url",
        "postgresql://u:secret@127.0.0.1:5432/db",
    ])
    .expect("pooled");
    let db = c.database().expect("config");
    assert_eq!(db.pooler, Pooler::Transaction);
    assert_eq!(
        db.listen_url.as_deref(),
        Some("postgresql://u:secret@127.0.0.1:5432/db")
    );
    assert!(!format!("{c:?} {db:?}").contains("secret"));
    for (args, name) in [
        (&["--db-pooler", "session"][..], "CONFAB_DB_POOLER"),
        (
            &["--listen-database-url", "sqlite:x.db"][..],
            "CONFAB_LISTEN_DATABASE_URL",
        ),
    ] {
        let e = common(args).expect_err(name);
        assert!(e.to_string().contains(name), "{name}: {e}");
    }
    // Both are for PostgreSQL.
    for args in [
        &["--db-pooler", "transaction"][..],
        &["--listen-database-url", pg][..],
    ] {
        let e = common(args)
            .expect("parsed")
            .database()
            .expect_err("sqlite");
        assert!(e.to_string().contains("DATABASE_URL"), "{e}");
    }
}

#[test]
fn settings_name_the_variable() {
    let s = settings(&[]).expect("defaults");
    assert_eq!(s.listen.given, "127.0.0.1:8080");
    assert_eq!(s.listen.addrs, ["127.0.0.1:8080".parse().expect("addr")]);
    assert_eq!(s.cors_origins, CorsOrigins::Off);
    assert_eq!(common(&[]).expect("defaults").log_format, LogFormat::Text);
    assert_eq!(s.db_wait(), Duration::from_secs(30));
    assert_eq!(s.db_pool_size, None);
    assert_eq!(s.sqlite_synchronous, Synchronous::Full);
    assert_eq!(
        settings(&["--sqlite-synchronous", " Normal "])
            .expect("normal")
            .sqlite_synchronous,
        Synchronous::Normal
    );
    assert_eq!(
        settings(&["--db-pool-size", " 5 "])
            .expect("five")
            .db_pool_size,
        Some(5)
    );
    assert_eq!(
        settings(&["--db-wait-secs", "0"])
            .expect("no wait")
            .db_wait(),
        Duration::ZERO
    );
    let s = settings(&["--listen", "localhost:8080"]).expect("host name");
    assert!(s
        .listen
        .addrs
        .iter()
        .all(|a| a.ip().is_loopback() && a.port() == 8080));
    for (arg, name) in [
        ("--listen=nope", "CONFAB_LISTEN"),
        ("--database-url=mysql://x", "DATABASE_URL"),
        ("--log=a=b=c", "RUST_LOG"),
        (
            "--cors-origins=https://a.example/path",
            "CONFAB_CORS_ORIGINS",
        ),
        ("--rate-limit-burst=-1", "CONFAB_RATE_LIMIT_BURST"),
        ("--db-wait-secs=soon", "CONFAB_DB_WAIT_SECS"),
        ("--db-pool-size=0", "CONFAB_DB_POOL_SIZE"),
        ("--db-pool-size=1001", "CONFAB_DB_POOL_SIZE"),
        ("--db-pool-size=many", "CONFAB_DB_POOL_SIZE"),
        ("--sqlite-synchronous=off", "CONFAB_SQLITE_SYNCHRONOUS"),
        ("--sqlite-synchronous=", "CONFAB_SQLITE_SYNCHRONOUS"),
        (
            "--webhook-allow-private=maybe",
            "CONFAB_WEBHOOK_ALLOW_PRIVATE",
        ),
    ] {
        let e = parse(&[arg]).err().expect(name);
        assert!(e.to_string().contains(name), "{name}: {e}");
    }
    let e = common(&["--log-format", "xml"]).expect_err("format");
    assert!(e.to_string().contains("xml"), "{e}");
    assert_eq!(
        common(&["--log-format", "JSON"]).expect("json").log_format,
        LogFormat::Json
    );
}

#[test]
fn webhook_allow_private_is_a_boolean() {
    let allow =
        |v: &str| settings(&["--webhook-allow-private", v]).map(|s| s.webhook_allow_private);
    for yes in ["true", "TRUE", "1", "yes"] {
        assert!(allow(yes).expect(yes), "{yes}");
    }
    for no in ["false", "False", "0", "no"] {
        assert!(!allow(no).expect(no), "{no}");
    }
    assert!(allow("on?").is_err());
}

#[test]
fn web_app_is_off_unless_asked_for() {
    assert!(!settings(&[]).expect("default").web_app);
    let web_app = |v: &str| settings(&["--web-app", v]).map(|s| s.web_app);
    assert!(web_app("true").expect("true"));
    assert!(!web_app("false").expect("false"));
    let error = web_app("maybe").expect_err("not a boolean").to_string();
    assert!(error.contains("CONFAB_WEB_APP"), "{error}");
}

#[test]
fn cors_origins() {
    let cors = |v: &str| settings(&["--cors-origins", v]).map(|s| s.cors_origins);
    assert_eq!(cors("").expect("empty"), CorsOrigins::Off);
    assert_eq!(cors("*").expect("any"), CorsOrigins::Any);
    assert_eq!(
        cors("https://app.example, http://localhost:3000").expect("two"),
        CorsOrigins::Some(vec![
            "https://app.example".into(),
            "http://localhost:3000".into()
        ])
    );
    for bad in [
        "app.example",
        "https://",
        "https://a.example/",
        "ftp://a",
        "*,https://a.example",
        "https://a.example:x",
    ] {
        assert!(cors(bad).is_err(), "{bad}");
    }
}

#[test]
fn hostile_load_settings() {
    let s = settings(&[]).expect("defaults");
    assert_eq!(s.max_streams_per_contact, 10);
    assert_eq!(s.idempotency_keys_per_day, 10_000);
    assert_eq!(s.reports_per_hour, 30);
    assert_eq!(s.max_group_members, 10_000);
    assert_eq!(s.trusted_proxies, TrustedProxies::default());
    assert_eq!(s.metrics_listen, None);
    assert_eq!(s.max_connections, None);
    let s = settings(&[
        "--max-streams-per-contact",
        "3",
        "--trusted-proxies",
        "10.0.0.0/8, fd00::/8",
        "--metrics-listen",
        "127.0.0.1:9090",
        "--max-connections",
        "500",
        "--idempotency-keys-per-day",
        "0",
        "--reports-per-hour",
        "5",
        "--max-group-members",
        "250",
    ])
    .expect("set");
    assert_eq!(s.idempotency_keys_per_day, 0);
    assert_eq!(s.reports_per_hour, 5);
    assert_eq!(s.max_group_members, 250);
    assert_eq!(s.max_streams_per_contact, 3);
    assert_eq!(
        s.trusted_proxies,
        "10.0.0.0/8,fd00::/8".parse().expect("cidrs")
    );
    assert_eq!(
        s.metrics_listen.map(|l| l.addrs),
        Some(vec!["127.0.0.1:9090".parse().expect("addr")])
    );
    assert_eq!(s.max_connections, Some(500));
    for (flag, bad, name) in [
        (
            "--max-streams-per-contact",
            "0",
            "CONFAB_MAX_STREAMS_PER_CONTACT",
        ),
        (
            "--max-streams-per-contact",
            "x",
            "CONFAB_MAX_STREAMS_PER_CONTACT",
        ),
        ("--trusted-proxies", "10.0.0.0/40", "CONFAB_TRUSTED_PROXIES"),
        ("--metrics-listen", "nowhere", "CONFAB_METRICS_LISTEN"),
        ("--max-connections", "0", "CONFAB_MAX_CONNECTIONS"),
        (
            "--idempotency-keys-per-day",
            "lots",
            "CONFAB_IDEMPOTENCY_KEYS_PER_DAY",
        ),
        ("--reports-per-hour", "many", "CONFAB_REPORTS_PER_HOUR"),
        ("--max-group-members", "0", "CONFAB_MAX_GROUP_MEMBERS"),
        ("--max-group-members", "many", "CONFAB_MAX_GROUP_MEMBERS"),
    ] {
        let e = settings(&[flag, bad]).expect_err(bad).to_string();
        assert!(e.contains(name), "{flag} {bad}: {e}");
    }
}

#[test]
fn rate_limits_default_on_and_zero_is_off() {
    let s = settings(&[]).expect("defaults");
    assert_eq!(s.rate_limits(), RateLimits::default());
    assert!(s.rate_limits().per_contact.is_some() && s.rate_limits().anonymous.is_some());
    let s = settings(&[
        "--rate-limit-per-second",
        "0",
        "--rate-limit-anon-burst",
        "0",
        "--rate-limit-key-burst",
        "0",
    ])
    .expect("zeros");
    assert_eq!(s.rate_limits(), RateLimits::OFF);
    let s = settings(&["--rate-limit-burst", " 7 "]).expect("burst");
    assert_eq!(s.rate_limits().per_contact, Quota::new(100, 7));
    for name in [
        "CONFAB_RATE_LIMIT_BURST",
        "CONFAB_RATE_LIMIT_ANON_PER_SECOND",
    ] {
        let flag = format!(
            "--{}",
            name.trim_start_matches("CONFAB_")
                .to_ascii_lowercase()
                .replace('_', "-")
        );
        let e = settings(&[&format!("{flag}=-1")]).expect_err("negative");
        assert!(e.to_string().contains(name), "{e}");
    }
}
