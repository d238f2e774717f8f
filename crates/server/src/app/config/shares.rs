//! The settings of what one client may take of the server beyond its
//! rate: connections per address, uploads under way, stored bytes, and
//! the free disk kept (flattened into `serve`'s [`super::Settings`]).

/// What one client may take (`confab serve --help` lists each).
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Configuration (each option also read from its environment variable)"
)]
pub struct ShareSettings {
    /// Connections one client address may hold open at once (a trusted
    /// proxy's own are not counted); one more is answered 429
    /// too_many_connections and closed. Default: an eighth of
    /// CONFAB_MAX_CONNECTIONS, at least 16.
    #[arg(
        long,
        env = "CONFAB_MAX_CONNECTIONS_PER_ADDRESS",
        value_name = "N",
        value_parser = count_parser("CONFAB_MAX_CONNECTIONS_PER_ADDRESS")
    )]
    pub max_connections_per_address: Option<usize>,

    /// Of those, how many may be still sending a request head or body
    /// (an idle kept-alive connection counts: its next head may be
    /// trickling); through trusted proxies, the bodies of the forwarded
    /// address. Default: a quarter of the connections per address, at
    /// least 8.
    #[arg(
        long,
        env = "CONFAB_MAX_PENDING_PER_ADDRESS",
        value_name = "N",
        value_parser = count_parser("CONFAB_MAX_PENDING_PER_ADDRESS")
    )]
    pub max_pending_per_address: Option<usize>,

    /// Uploads (POST /v1/attachments) one contact may have under way at
    /// once, all its tokens together; one more is 429 too_many_uploads.
    #[arg(
        long,
        env = "CONFAB_MAX_UPLOADS_PER_CONTACT",
        default_value_t = confab_service::DEFAULT_UPLOADS_PER_CONTACT,
        value_name = "N",
        value_parser = count_parser("CONFAB_MAX_UPLOADS_PER_CONTACT")
    )]
    pub max_uploads_per_contact: usize,

    /// Bytes one contact's uploaded files (attached or not) may take in
    /// all; an upload past it is 413 storage_quota (0: no quota).
    #[arg(
        long,
        env = "CONFAB_UPLOAD_QUOTA_BYTES",
        default_value_t = confab_service::DEFAULT_UPLOAD_QUOTA_BYTES,
        value_name = "BYTES",
        value_parser = bytes_parser("CONFAB_UPLOAD_QUOTA_BYTES", "no quota")
    )]
    pub upload_quota_bytes: u64,

    /// Free bytes kept on the disk of a local files' folder: below it
    /// uploads are 507 insufficient_storage (0: no floor; an S3 bucket
    /// has none).
    #[arg(
        long,
        env = "CONFAB_STORAGE_MIN_FREE_BYTES",
        default_value_t = confab_service::DEFAULT_MIN_FREE_BYTES,
        value_name = "BYTES",
        value_parser = bytes_parser("CONFAB_STORAGE_MIN_FREE_BYTES", "no floor")
    )]
    pub storage_min_free_bytes: u64,
}

impl ShareSettings {
    /// What uploads may take: the quota, the uploads under way, the floor.
    pub fn upload_limits(&self) -> confab_service::UploadLimits {
        confab_service::UploadLimits {
            quota_bytes: (self.upload_quota_bytes > 0).then_some(self.upload_quota_bytes),
            per_contact: self.max_uploads_per_contact,
            min_free_bytes: self.storage_min_free_bytes,
        }
    }
}

/// A count of at least 1, its errors naming `name`.
fn count_parser(name: &'static str) -> impl Fn(&str) -> Result<usize, String> + Clone {
    move |raw: &str| match raw.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "{name} {raw:?} is not a whole number of at least 1"
        )),
    }
}

/// A number of bytes, 0 meaning `zero` (e.g. "no quota").
fn bytes_parser(
    name: &'static str,
    zero: &'static str,
) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |raw: &str| {
        raw.trim()
            .parse::<u64>()
            .map_err(|_| format!("{name} {raw:?} is not a whole number of bytes (0: {zero})"))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::ShareSettings;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        shares: ShareSettings,
    }

    fn shares(args: &[&str]) -> Result<ShareSettings, clap::Error> {
        Cli::try_parse_from(std::iter::once("confab").chain(args.iter().copied())).map(|c| c.shares)
    }

    #[test]
    fn defaults_and_errors_naming_the_variable() {
        let s = shares(&[]).expect("defaults");
        assert_eq!(s.max_connections_per_address, None);
        assert_eq!(s.max_pending_per_address, None);
        assert_eq!(
            s.upload_limits(),
            confab_service::UploadLimits {
                quota_bytes: Some(1 << 30),
                per_contact: 4,
                min_free_bytes: 1 << 30,
            }
        );
        let s = shares(&[
            "--max-connections-per-address",
            "20",
            "--max-pending-per-address",
            "5",
            "--max-uploads-per-contact",
            "2",
            "--upload-quota-bytes",
            "0",
            "--storage-min-free-bytes",
            "0",
        ])
        .expect("set");
        assert_eq!(
            (s.max_connections_per_address, s.max_pending_per_address),
            (Some(20), Some(5))
        );
        let limits = s.upload_limits();
        assert_eq!(
            (
                limits.quota_bytes,
                limits.per_contact,
                limits.min_free_bytes
            ),
            (None, 2, 0)
        );
        for (flag, bad, name) in [
            (
                "--max-connections-per-address",
                "0",
                "CONFAB_MAX_CONNECTIONS_PER_ADDRESS",
            ),
            (
                "--max-pending-per-address",
                "x",
                "CONFAB_MAX_PENDING_PER_ADDRESS",
            ),
            (
                "--max-uploads-per-contact",
                "0",
                "CONFAB_MAX_UPLOADS_PER_CONTACT",
            ),
            ("--upload-quota-bytes", "1GB", "CONFAB_UPLOAD_QUOTA_BYTES"),
            (
                "--storage-min-free-bytes",
                "lots",
                "CONFAB_STORAGE_MIN_FREE_BYTES",
            ),
        ] {
            let e = shares(&[flag, bad]).expect_err(flag).to_string();
            assert!(e.contains(name), "{flag} {bad}: {e}");
        }
    }
}
