//! How each setting's text is read: its range, its form, and an error that
//! names the variable.

use super::*;

/// `CONFAB_MAX_STREAMS_PER_CONTACT`: 1 to 1000.
pub(super) fn parse_max_streams(raw: &str) -> Result<usize, String> {
    match raw.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!(
            "CONFAB_MAX_STREAMS_PER_CONTACT {raw:?} is not a whole number of streams from 1 to 1000"
        )),
    }
}

/// `CONFAB_MAX_CONNECTIONS`: at least 1 (the open-file limit is checked at
/// startup, where it is known).
pub(super) fn parse_max_connections(raw: &str) -> Result<usize, String> {
    match raw.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "CONFAB_MAX_CONNECTIONS {raw:?} is not a whole number of connections, at least 1"
        )),
    }
}

pub(super) fn parse_trusted_proxies(raw: &str) -> Result<TrustedProxies, String> {
    raw.parse()
        .map_err(|e| format!("CONFAB_TRUSTED_PROXIES: {e}"))
}

pub(super) fn parse_metrics_listen(raw: &str) -> Result<Listen, String> {
    parse_listen(raw).map_err(|e| e.replacen("CONFAB_LISTEN", "CONFAB_METRICS_LISTEN", 1))
}

pub(crate) fn parse_allow_private(raw: &str) -> Result<bool, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" | "" => Ok(false),
        _ => Err(format!(
            "CONFAB_WEBHOOK_ALLOW_PRIVATE {raw:?} is not true or false"
        )),
    }
}

pub(super) fn parse_web_app(raw: &str) -> Result<bool, String> {
    parse_allow_private(raw).map_err(|_| format!("CONFAB_WEB_APP {raw:?} is not true or false"))
}

pub(super) fn parse_database(raw: &str) -> Result<Database, String> {
    Database::from_env_value(Some(raw)).map_err(|e| e.to_string())
}

pub(super) fn parse_listen(raw: &str) -> Result<Listen, String> {
    let given = raw.trim();
    let error = |why: String| {
        format!(
            "CONFAB_LISTEN {raw:?} is not an address like 127.0.0.1:8080 or localhost:8080: {why}"
        )
    };
    let addrs: Vec<SocketAddr> = given
        .to_socket_addrs()
        .map_err(|e| error(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(error("it resolves to no address".to_owned()));
    }
    Ok(Listen {
        given: given.to_owned(),
        addrs,
    })
}

pub(super) fn parse_log_filter(raw: &str) -> Result<String, String> {
    EnvFilter::builder()
        .parse(raw)
        .map(|_| raw.to_owned())
        .map_err(|e| {
            format!("RUST_LOG {raw:?} is not a log filter such as info or confab_server=debug: {e}")
        })
}

pub(super) fn parse_max_upload_bytes(raw: &str) -> Result<u64, String> {
    match raw.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "CONFAB_MAX_UPLOAD_BYTES {raw:?} is not a whole number of bytes of at least 1"
        )),
    }
}

pub(super) fn parse_public_url(raw: &str) -> Result<String, String> {
    let url = raw.trim().trim_end_matches('/');
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && reqwest::Url::parse(url).is_ok_and(|u| u.host_str().is_some() && u.query().is_none());
    if ok {
        Ok(url.to_owned())
    } else {
        Err(format!(
            "CONFAB_PUBLIC_URL {raw:?} is not an http:// or https:// URL with a host (e.g. https://chat.example.com)"
        ))
    }
}

pub(super) fn parse_max_group_members(raw: &str) -> Result<u64, String> {
    match raw.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "CONFAB_MAX_GROUP_MEMBERS {raw:?} is not a whole number of at least 1"
        )),
    }
}

pub(super) fn limit_parser(name: &'static str) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |raw: &str| {
        raw.trim().parse().map_err(|_| {
            format!(
                "{name} {raw:?} is not a whole number from 0 to {} (0: no limit)",
                u32::MAX
            )
        })
    }
}

pub(super) fn seconds_parser(name: &'static str) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |raw: &str| {
        raw.trim().parse().map_err(|_| {
            format!(
                "{name} {raw:?} is not a whole number of seconds from 0 to {} (0: no wait)",
                u32::MAX
            )
        })
    }
}

/// `CONFAB_DB_POOL_SIZE`: 1 to 1000 connections.
pub(super) fn parse_pool_size(raw: &str) -> Result<u32, String> {
    match raw.trim().parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!(
            "CONFAB_DB_POOL_SIZE {raw:?} is not a whole number of connections from 1 to 1000"
        )),
    }
}

/// `CONFAB_SQLITE_SYNCHRONOUS`: `full` or `normal`, in any case.
pub(super) fn parse_synchronous(raw: &str) -> Result<Synchronous, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "full" => Ok(Synchronous::Full),
        "normal" => Ok(Synchronous::Normal),
        _ => Err(format!(
            "CONFAB_SQLITE_SYNCHRONOUS {raw:?} is neither full (every commit synced) nor normal (synced at checkpoints)"
        )),
    }
}
