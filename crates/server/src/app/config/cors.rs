//! `CONFAB_CORS_ORIGINS`: the browser origins CORS allows, parsed.

/// The browser origins CORS allows (`CONFAB_CORS_ORIGINS`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// No CORS headers at all (the default).
    #[default]
    Off,
    /// `*`: any origin.
    Any,
    /// These origins exactly (`scheme://host[:port]`).
    Some(Vec<String>),
}

pub(super) fn parse_cors_origins(raw: &str) -> Result<CorsOrigins, String> {
    let origins: Vec<&str> = raw
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    if origins.is_empty() {
        return Ok(CorsOrigins::Off);
    }
    if origins == ["*"] {
        return Ok(CorsOrigins::Any);
    }
    for origin in &origins {
        if !is_origin(origin) {
            return Err(format!(
                "CONFAB_CORS_ORIGINS: {origin:?} is not an origin like https://app.example or http://localhost:3000 (scheme, host and port only, no path), nor * alone"
            ));
        }
    }
    Ok(CorsOrigins::Some(
        origins.into_iter().map(str::to_owned).collect(),
    ))
}

/// `http(s)://host[:port]`, as a browser sends it in `Origin`.
fn is_origin(s: &str) -> bool {
    let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || rest.starts_with('[') => (h, Some(p)),
        _ => (rest, None),
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'))
        && port
            .is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}
