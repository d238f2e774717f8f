//! The settings that keep searches from taking the database from everyone
//! else: how many run at once per contact, and in all.

/// What `serve` reads about search (flattened into `Settings`).
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Configuration (each option also read from its environment variable)"
)]
pub struct SearchSettings {
    /// Searches (GET /v1/messages/search) one contact may run at once, all
    /// its tokens together, from 1 to 1000; one more is 429
    /// `too_many_searches` with Retry-After.
    #[arg(
        long,
        env = "CONFAB_MAX_SEARCHES_PER_CONTACT",
        default_value_t = confab_service::DEFAULT_SEARCHES_PER_CONTACT,
        value_name = "N",
        value_parser = parse_max_searches
    )]
    pub max_searches_per_contact: u32,

    /// Searches that run at once, all contacts together, from 1 to 1000,
    /// each on a database connection of their own (not the pool's: sends
    /// and reads keep theirs); the others wait their turn. Default: half
    /// this machine's CPUs, at least 1 (set it for a PostgreSQL on a host
    /// of its own).
    #[arg(
        long,
        env = "CONFAB_SEARCH_CONNECTIONS",
        value_name = "CONNECTIONS",
        value_parser = parse_search_connections
    )]
    pub search_connections: Option<u32>,
}

/// `CONFAB_MAX_SEARCHES_PER_CONTACT`: 1 to 1000.
fn parse_max_searches(raw: &str) -> Result<u32, String> {
    match raw.trim().parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!(
            "CONFAB_MAX_SEARCHES_PER_CONTACT {raw:?} is not a whole number of searches from 1 to 1000"
        )),
    }
}

/// `CONFAB_SEARCH_CONNECTIONS`: 1 to 1000.
fn parse_search_connections(raw: &str) -> Result<u32, String> {
    match raw.trim().parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!(
            "CONFAB_SEARCH_CONNECTIONS {raw:?} is not a whole number of connections from 1 to 1000"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        search: SearchSettings,
    }

    fn parse(args: &[&str]) -> Result<SearchSettings, String> {
        let mut argv = vec!["confab"];
        argv.extend_from_slice(args);
        <Cli as clap::Parser>::try_parse_from(argv)
            .map(|c| c.search)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_bounds_name_the_variable() {
        let s = parse(&[]).expect("defaults");
        assert_eq!(s.max_searches_per_contact, 2);
        assert_eq!(s.search_connections, None);
        let s = parse(&[
            "--max-searches-per-contact",
            " 5 ",
            "--search-connections",
            "3",
        ])
        .expect("given");
        assert_eq!(
            (s.max_searches_per_contact, s.search_connections),
            (5, Some(3))
        );
        for bad in ["0", "1001", "-1", "two", ""] {
            // `=`, so that "-1" is a value, not an option.
            let e = parse(&[&format!("--max-searches-per-contact={bad}")]).expect_err(bad);
            assert!(e.contains("CONFAB_MAX_SEARCHES_PER_CONTACT"), "{bad}: {e}");
            let e = parse(&[&format!("--search-connections={bad}")]).expect_err(bad);
            assert!(e.contains("CONFAB_SEARCH_CONNECTIONS"), "{bad}: {e}");
        }
    }
}
