use super::*;
use clap::CommandFactory;

#[test]
fn durations() {
    assert_eq!(parse_duration("90s"), Ok(90));
    assert_eq!(parse_duration("15m"), Ok(900));
    assert_eq!(parse_duration("12h"), Ok(43_200));
    assert_eq!(parse_duration("30d"), Ok(2_592_000));
    assert_eq!(parse_duration("2w"), Ok(1_209_600));
    for bad in [
        "",
        "30",
        "d",
        "-1d",
        "1.5h",
        "0s",
        "30x",
        "1 d",
        "99999999999999999999d",
        "é",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
}

#[test]
fn command_line_forms() {
    Cli::command().debug_assert();
    let parse = |args: &[&str]| parse_command_line(args.iter().map(Into::into)).map(|c| c.command);
    assert!(matches!(parse(&["confab"]), Ok(None)));
    assert!(matches!(
        parse(&["confab", "serve"]),
        Ok(Some(Command::Serve(_)))
    ));
    assert!(matches!(
        parse(&["confab", "migrate"]),
        Ok(Some(Command::Migrate(_)))
    ));
    // A command's options are its own: serve's after `serve`, none of
    // them before a command nor with another.
    match parse(&["confab", "serve", "--listen", "127.0.0.1:9"]) {
        Ok(Some(Command::Serve(settings))) => assert_eq!(settings.listen.given, "127.0.0.1:9"),
        other => panic!("{other:?}"),
    }
    match parse(&["confab", "migrate", "--db-wait-secs", "0"]) {
        Ok(Some(Command::Migrate(settings))) => assert_eq!(settings.db_wait_secs, 0),
        other => panic!("{other:?}"),
    }
    for wrong in [
        &["confab", "--listen", "127.0.0.1:9", "serve"][..],
        &["confab", "migrate", "--listen", "127.0.0.1:9"][..],
        &["confab", "key", "list", "--rate-limit-burst", "5"][..],
        &["confab", "contact", "create", "--db-pool-size", "5"][..],
    ] {
        assert!(parse(wrong).is_err(), "{wrong:?}");
    }
    // Every command takes the database and logging options.
    for args in [
        &[
            "confab",
            "key",
            "list",
            "--database-url",
            "x.db",
            "--log",
            "debug",
        ][..],
        &["confab", "migrate", "--db-pooler", "transaction"][..],
        &["confab", "--log-format", "json", "serve"][..],
    ] {
        assert!(parse(args).is_ok(), "{args:?}");
    }
    assert!(matches!(
        parse(&[
            "confab",
            "contact",
            "create",
            "--username",
            "alice",
            "--phone-number",
            "+15550100"
        ]),
        Ok(Some(Command::Contact(ContactCommand::Create {
            avatar_url: None,
            ..
        })))
    ));
    assert!(matches!(
        parse(&[
            "confab",
            "token",
            "issue",
            "--username",
            "alice",
            "--expires-in",
            "30d"
        ]),
        Ok(Some(Command::Token(TokenCommand::Issue {
            expires_in: Some(2_592_000),
            ..
        })))
    ));
    assert!(matches!(
        parse(&["confab", "token", "revoke", "--username", "alice"]),
        Ok(Some(Command::Token(TokenCommand::Revoke { .. })))
    ));
    assert!(parse(&[
        "confab",
        "token",
        "issue",
        "--username",
        "a",
        "--expires-in",
        "soon"
    ])
    .is_err());
}
