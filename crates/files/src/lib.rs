//! Where uploaded files' bytes live: the adapter of the port
//! [`confab_ports::FileStorage`] over the [`object_store`] crate, in a local
//! folder (the default) or in any S3-compatible store.
//!
//! A file is stored under the key `<prefix>/<attachment id>` (the id in its
//! one spelling, lowercase and hyphenated); in a local folder, directly
//! under the folder. See [`ObjectFiles::from_url`] for the accepted
//! locations.
//!
//! # Writing
//!
//! A writer keeps memory bounded whatever the file's size: it buffers up to
//! one part of 5 MiB (S3's smallest part). A file that ends before its
//! first part is full is stored in one `PUT`. A larger one becomes a
//! multipart upload: each full part is sent while the next is buffered,
//! with at most two parts in flight (a writer waits for one to be done
//! before it accepts more bytes), so that a writer holds at most about
//! 15 MiB. S3 allows 10,000 parts: 5 MiB parts cap a file at about 48 GiB.
//!
//! Nothing is readable under the key before [`FileWriter::finish`]
//! returns: a local file is written aside (`<key>#<n>`) and renamed on
//! completion; an S3 multipart upload is completed in one call. An aborted
//! writer leaves nothing behind. A writer dropped without `finish` or
//! `abort` aborts in the background (on the current tokio runtime): a
//! local file written aside is removed, an S3 multipart upload is aborted;
//! if that abort cannot run (no runtime, the store unreachable, the
//! process dies), S3 keeps an incomplete multipart upload, never an object
//! (a bucket lifecycle rule "AbortIncompleteMultipartUpload" removes those),
//! and a local folder keeps a `<key>#<n>` file, never one under the key.
//!
//! # Errors
//!
//! A store that cannot be reached (connection refused or reset, timeouts,
//! after object_store's own retries) is `StoreError::Unavailable`; anything
//! else `StoreError::Other`, the source error kept whole.

#![warn(missing_docs)]

use std::fmt;
use std::io::{ErrorKind, SeekFrom};
use std::path::Path as FsPath;
use std::sync::Arc;

use anyhow::{bail, Context as _};
use async_trait::async_trait;
use bytes::Bytes;
use confab_domain::AttachmentId;
use confab_ports::{BoxError, ByteRange, FileReader, FileStorage, FileWriter, StoreError};
use futures_util::stream::{BoxStream, StreamExt as _};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{
    BackoffConfig, ClientConfigKey, GetOptions, GetRange, GetResultPayload, ObjectStore,
    ObjectStoreExt as _, PutPayload, RetryConfig, WriteMultipart,
};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

/// The size of a part of a multipart upload: S3's smallest (every part but
/// the last must have at least 5 MiB).
const PART_SIZE: usize = 5 * 1024 * 1024;

/// How many parts of one upload may be in flight at once. With the part
/// being buffered, a writer holds at most `(MAX_PARTS_IN_FLIGHT + 1) *
/// PART_SIZE` bytes.
const MAX_PARTS_IN_FLIGHT: usize = 2;

/// The size of the chunks a local file is read in.
const READ_CHUNK: u64 = 64 * 1024;

/// The accepted forms of a storage location, for error messages.
const ACCEPTED: &str = "expected an empty value (the default folder), a folder path, \
     file:///absolute/path or s3://bucket[/prefix]";

/// The files' storage: a local folder or an S3-compatible bucket, through
/// [`object_store`]. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct ObjectFiles {
    store: Arc<dyn ObjectStore>,
    description: String,
    /// The folder, when local: a deletion also removes what a writer
    /// killed half-way left aside there (`<key>#<n>`).
    local_dir: Option<std::path::PathBuf>,
}

impl fmt::Debug for ObjectFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the store's own Debug: it would show its configuration.
        f.debug_struct("ObjectFiles")
            .field("location", &self.description)
            .finish_non_exhaustive()
    }
}

impl ObjectFiles {
    /// The storage at `url`:
    ///
    /// - empty: the local folder `default_dir`;
    /// - `file:///absolute/path`, or a path (absolute, or relative to the
    ///   current directory): that local folder.
    ///
    /// A local folder is created if it is missing.
    ///
    /// - `s3://bucket` or `s3://bucket/prefix`: that bucket of an
    ///   S3-compatible store, every key under `prefix/` when there is one.
    ///   The rest of the configuration comes from the environment, as
    ///   object_store's `AmazonS3Builder::from_env` reads it: every
    ///   variable `AWS_<KEY>` where `<KEY>` is one of its configuration
    ///   keys, notably `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`;
    ///   `AWS_ENDPOINT_URL_S3` wins over both) for a store other than AWS,
    ///   `AWS_ALLOW_HTTP=true` for an endpoint in `http://`,
    ///   `AWS_REGION` (or `AWS_DEFAULT_REGION`; `us-east-1` when neither
    ///   is set), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    ///   `AWS_SESSION_TOKEN` (without keys: the instance's, container's or
    ///   web identity's credentials), `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`
    ///   (path-style requests by default). Nothing is sent to the store
    ///   here.
    ///
    /// # Errors
    /// Any other form of `url`; a folder that cannot be created; an S3
    /// configuration object_store refuses, or an `http://` endpoint
    /// without `AWS_ALLOW_HTTP=true`.
    pub fn from_url(url: &str, default_dir: &FsPath) -> anyhow::Result<Self> {
        let url = url.trim();
        if url.is_empty() {
            return Self::local(default_dir);
        }
        let Some((scheme, rest)) = url.split_once(':') else {
            return Self::local(FsPath::new(url));
        };
        if scheme.eq_ignore_ascii_case("s3") {
            let Some(location) = rest.strip_prefix("//") else {
                bail!("storage location {url:?}: {ACCEPTED}");
            };
            return Self::s3(location);
        }
        if scheme.eq_ignore_ascii_case("file") {
            let parsed =
                url::Url::parse(url).with_context(|| format!("storage location {url:?}"))?;
            let path = parsed
                .to_file_path()
                .map_err(|()| anyhow::anyhow!("storage location {url:?}: {ACCEPTED}"))?;
            return Self::local(&path);
        }
        if rest.starts_with("//") {
            // Another scheme (http://, gs://, ...).
            bail!("storage location {url:?}: unknown scheme {scheme:?}; {ACCEPTED}");
        }
        // A path with a colon in it (or a Windows drive letter).
        Self::local(FsPath::new(url))
    }

    /// What the storage is, for a startup log line: the local folder, or
    /// the bucket, prefix, endpoint and region. Never a credential.
    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// The local folder `dir`, created if missing.
    fn local(dir: &FsPath) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the files' folder {}", dir.display()))?;
        let dir = std::fs::canonicalize(dir)
            .with_context(|| format!("cannot resolve the files' folder {}", dir.display()))?;
        // fsync on completion: once `finish` returns, the database says the
        // file is there; it must survive a crash of the machine.
        let store = LocalFileSystem::new_with_prefix(&dir)
            .with_context(|| format!("cannot use the files' folder {}", dir.display()))?
            .with_fsync(true);
        Ok(Self {
            store: Arc::new(store),
            description: format!("local folder {}", dir.display()),
            local_dir: Some(dir),
        })
    }

    /// The bucket and optional prefix of `location` (`bucket[/prefix]`),
    /// the rest from the environment.
    fn s3(location: &str) -> anyhow::Result<Self> {
        let (bucket, prefix) = match location.split_once('/') {
            Some((bucket, prefix)) => (bucket, prefix.trim_matches('/')),
            None => (location, ""),
        };
        if bucket.is_empty() {
            bail!("storage location \"s3://{location}\": no bucket; {ACCEPTED}");
        }
        let prefix = if prefix.is_empty() {
            None
        } else {
            Some(Path::parse(prefix).with_context(|| {
                format!("storage location \"s3://{location}\": invalid prefix {prefix:?}")
            })?)
        };

        // A store that is down fails a request within seconds (a 503),
        // instead of object_store's default of 10 retries over 3 minutes:
        // a user waits on an upload or a download. The sweeper retries on
        // its own every 30 s.
        let builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: 3,
                retry_timeout: std::time::Duration::from_secs(15),
            });
        let endpoint = builder
            .get_config_value(&AmazonS3ConfigKey::S3Endpoint)
            .or_else(|| builder.get_config_value(&AmazonS3ConfigKey::Endpoint));
        let region = builder
            .get_config_value(&AmazonS3ConfigKey::Region)
            .unwrap_or_else(|| "us-east-1".to_owned());
        if let Some(endpoint) = &endpoint {
            let allow_http = builder
                .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if endpoint.to_ascii_lowercase().starts_with("http://") && !allow_http {
                bail!(
                    "S3 endpoint {}: plain HTTP needs AWS_ALLOW_HTTP=true",
                    redact(endpoint)
                );
            }
        }
        let s3 = builder
            .build()
            .with_context(|| format!("S3 storage s3://{location}"))?;

        let description = format!(
            "S3 bucket {bucket}{} at {} (region {region})",
            prefix
                .as_ref()
                .map(|p| format!(", prefix {p}/"))
                .unwrap_or_default(),
            endpoint.as_deref().map_or_else(|| "AWS".to_owned(), redact),
        );
        let store: Arc<dyn ObjectStore> = match prefix {
            Some(prefix) => Arc::new(PrefixStore::new(s3, prefix)),
            None => Arc::new(s3),
        };
        Ok(Self {
            store,
            description,
            local_dir: None,
        })
    }
}

/// `endpoint` without what could be a secret: user, password, query.
fn redact(endpoint: &str) -> String {
    match url::Url::parse(endpoint) {
        Ok(mut url) => {
            // Both only fail for URLs that cannot have them.
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => "(an endpoint that is not a URL)".to_owned(),
    }
}

/// The key of attachment `id`'s file.
fn key(id: AttachmentId) -> Path {
    Path::from(id.to_string())
}

/// Whether `error`, or one of its causes, says the store could not be
/// reached.
fn is_unreachable(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(http) = error.downcast_ref::<HttpError>() {
            return matches!(
                http.kind(),
                HttpErrorKind::Connect
                    | HttpErrorKind::Request
                    | HttpErrorKind::Timeout
                    | HttpErrorKind::Interrupted
            );
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::NotConnected
                    | ErrorKind::TimedOut
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
            ) {
                return true;
            }
        }
        cause = error.source();
    }
    false
}

/// `error` as the port's error: `Unavailable` when the store could not be
/// reached, `Other` otherwise (a missing object included: the callers
/// that expect one handle `NotFound` themselves).
fn store_error(error: object_store::Error) -> StoreError {
    if is_unreachable(&error) {
        StoreError::Unavailable(Box::new(error))
    } else {
        StoreError::Other(Box::new(error))
    }
}

/// An error of this adapter's own, as `StoreError::Other`.
fn other(message: &'static str) -> StoreError {
    StoreError::Other(BoxError::from(message))
}

#[async_trait]
impl FileStorage for ObjectFiles {
    async fn create(&self, id: AttachmentId) -> Result<Box<dyn FileWriter>, StoreError> {
        Ok(Box::new(ObjectWriter {
            store: Arc::clone(&self.store),
            key: key(id),
            state: WriteState::Buffer {
                chunks: Vec::new(),
                len: 0,
            },
        }))
    }

    async fn open(
        &self,
        id: AttachmentId,
        range: Option<ByteRange>,
    ) -> Result<Box<dyn FileReader>, StoreError> {
        let options = GetOptions {
            range: range.map(|r| GetRange::Bounded(r.start..r.end)),
            ..GetOptions::default()
        };
        let result = match self.store.get_opts(&key(id), options).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Err(StoreError::NotFound),
            Err(e) => return Err(store_error(e)),
        };
        let range = result.range.clone();
        match result.payload {
            GetResultPayload::File(file, _) => {
                let mut file = tokio::fs::File::from_std(file);
                file.seek(SeekFrom::Start(range.start))
                    .await
                    .map_err(|e| StoreError::Other(Box::new(e)))?;
                Ok(Box::new(ObjectReader::File {
                    file,
                    remaining: range.end - range.start,
                }))
            }
            GetResultPayload::Stream(stream) => Ok(Box::new(ObjectReader::Stream(stream))),
        }
    }

    /// Also, in a local folder, the file's partial copies a process
    /// killed while writing left aside (`<key>#<n>`): a file's deletion is
    /// scheduled before its first byte is written, so this is where they
    /// go. (On S3 an upload cut short leaves an incomplete multipart
    /// upload, never an object: a bucket lifecycle rule aborting those
    /// removes its parts; docs/deployment.md.)
    async fn delete(&self, id: AttachmentId) -> Result<(), StoreError> {
        match self.store.delete(&key(id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(store_error(e)),
        }
        if let Some(dir) = &self.local_dir {
            let prefix = format!("{}#", id.as_uuid().hyphenated());
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || remove_partials(&dir, &prefix))
                .await
                .map_err(|e| StoreError::Other(Box::new(e)))?
                .map_err(|e| StoreError::Other(Box::new(e)))?;
        }
        Ok(())
    }

    /// A local folder's disk: what an unprivileged writer may still use
    /// (`statvfs`'s available blocks, not the root-reserved ones). One
    /// system call, no blocking read.
    async fn free_space(&self) -> Result<Option<u64>, StoreError> {
        let Some(dir) = &self.local_dir else {
            return Ok(None);
        };
        let stat = rustix::fs::statvfs(dir)
            .map_err(|e| StoreError::Other(Box::new(std::io::Error::from(e))))?;
        Ok(Some(stat.f_bavail.saturating_mul(stat.f_frsize)))
    }
}

/// Removes `dir/<prefix><n>` for the first [`PARTIAL_SUFFIXES`] `n`:
/// object_store stages a local write as `<key>#<n>` with the first `n`
/// from 1 whose file does not exist yet, and one attachment id has one
/// writer, so a bounded number of names is looked at (never the whole
/// folder).
fn remove_partials(dir: &FsPath, prefix: &str) -> std::io::Result<()> {
    for n in 1..=PARTIAL_SUFFIXES {
        match std::fs::remove_file(dir.join(format!("{prefix}{n}"))) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How many staged names of one key [`remove_partials`] looks at.
const PARTIAL_SUFFIXES: u32 = 8;

/// A file being written (see the crate's documentation).
struct ObjectWriter {
    store: Arc<dyn ObjectStore>,
    key: Path,
    state: WriteState,
}

enum WriteState {
    /// Less than a part so far: nothing sent yet.
    Buffer { chunks: Vec<Bytes>, len: usize },
    /// A multipart upload under way.
    Upload(WriteMultipart),
    /// Finished, aborted, or its upload handed to a background abort.
    Closed,
}

/// Hands the chunks of `bytes` to `upload`, at most a part at a time and
/// only while fewer than `MAX_PARTS_IN_FLIGHT` parts are in flight, so
/// that a chunk of any size keeps the bound.
async fn feed(upload: &mut WriteMultipart, mut bytes: Bytes) -> Result<(), StoreError> {
    while !bytes.is_empty() {
        upload
            .wait_for_capacity(MAX_PARTS_IN_FLIGHT)
            .await
            .map_err(store_error)?;
        let piece = bytes.split_to(bytes.len().min(PART_SIZE));
        // Starts at most one part: less than a part was buffered.
        upload.put(piece);
    }
    Ok(())
}

#[async_trait]
impl FileWriter for ObjectWriter {
    async fn write(&mut self, mut chunk: Vec<u8>) -> Result<(), StoreError> {
        if chunk.is_empty() {
            return Ok(());
        }
        // A buffered chunk keeps its whole allocation: not much more than
        // its bytes, or the bound on memory would depend on the caller.
        if chunk.capacity() - chunk.len() > chunk.len() / 8 {
            chunk.shrink_to_fit();
        }
        let bytes = Bytes::from(chunk);
        match &mut self.state {
            WriteState::Buffer { chunks, len } => {
                if *len + bytes.len() < PART_SIZE {
                    *len += bytes.len();
                    chunks.push(bytes);
                    return Ok(());
                }
                // A part's worth: from here on, a multipart upload. The
                // buffer stays as it is if the upload cannot start.
                let upload = self
                    .store
                    .put_multipart(&self.key)
                    .await
                    .map_err(store_error)?;
                let mut upload = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
                for buffered in chunks.drain(..) {
                    upload.put(buffered);
                }
                self.state = WriteState::Upload(upload);
                let WriteState::Upload(upload) = &mut self.state else {
                    unreachable!("just set")
                };
                feed(upload, bytes).await
            }
            WriteState::Upload(upload) => feed(upload, bytes).await,
            WriteState::Closed => Err(other("write to a closed file writer")),
        }
    }

    async fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        match std::mem::replace(&mut self.state, WriteState::Closed) {
            WriteState::Buffer { chunks, .. } => {
                let payload: PutPayload = chunks.into_iter().collect();
                self.store
                    .put(&self.key, payload)
                    .await
                    .map(drop)
                    .map_err(store_error)
            }
            // On failure, `finish` aborts the upload itself.
            WriteState::Upload(upload) => upload.finish().await.map(drop).map_err(store_error),
            WriteState::Closed => Err(other("finish of a closed file writer")),
        }
    }

    async fn abort(mut self: Box<Self>) -> Result<(), StoreError> {
        match std::mem::replace(&mut self.state, WriteState::Closed) {
            WriteState::Buffer { .. } | WriteState::Closed => Ok(()),
            WriteState::Upload(upload) => upload.abort().await.map_err(store_error),
        }
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        let WriteState::Upload(upload) = std::mem::replace(&mut self.state, WriteState::Closed)
        else {
            return;
        };
        let key = self.key.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = upload.abort().await {
                        tracing::warn!(
                            %key,
                            error = &error as &dyn std::error::Error,
                            "abort of an abandoned file upload failed"
                        );
                    }
                });
            }
            // Without a runtime: dropping the upload still removes a local
            // file written aside; an S3 upload stays incomplete.
            Err(_) => drop(upload),
        }
    }
}

/// A file being read.
enum ObjectReader {
    /// From a local file, `remaining` bytes from its current position.
    File {
        file: tokio::fs::File,
        remaining: u64,
    },
    /// From a remote store's response.
    Stream(BoxStream<'static, object_store::Result<Bytes>>),
}

#[async_trait]
impl FileReader for ObjectReader {
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, StoreError> {
        match self {
            Self::File { file, remaining } => {
                if *remaining == 0 {
                    return Ok(None);
                }
                let size = (*remaining).min(READ_CHUNK);
                let mut chunk = vec![0; usize::try_from(size).unwrap_or(usize::MAX)];
                file.read_exact(&mut chunk).await.map_err(|e| {
                    if e.kind() == ErrorKind::UnexpectedEof {
                        other("the file is shorter than when it was opened")
                    } else {
                        StoreError::Other(Box::new(e))
                    }
                })?;
                *remaining -= size;
                Ok(Some(chunk))
            }
            Self::Stream(stream) => loop {
                match stream.next().await {
                    None => return Ok(None),
                    Some(Ok(bytes)) if bytes.is_empty() => {}
                    Some(Ok(bytes)) => return Ok(Some(Vec::from(bytes))),
                    Some(Err(e)) => return Err(store_error(e)),
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use object_store::RetryConfig;

    fn id() -> AttachmentId {
        AttachmentId::from_uuid(uuid::Uuid::now_v7())
    }

    /// A store at a port where nothing listens is `Unavailable`, not
    /// `Other`.
    #[tokio::test]
    async fn unreachable_store_is_unavailable() {
        let s3 = AmazonS3Builder::new()
            .with_bucket_name("nowhere")
            .with_region("us-east-1")
            .with_endpoint("http://127.0.0.1:9")
            .with_allow_http(true)
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .with_retry(RetryConfig {
                max_retries: 0,
                ..RetryConfig::default()
            })
            .build()
            .expect("s3 builder");
        let files = ObjectFiles {
            store: Arc::new(s3),
            description: String::new(),
            local_dir: None,
        };
        let Err(error) = files.open(id(), None).await else {
            panic!("open succeeded against nothing")
        };
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        let error = files
            .delete(id())
            .await
            .expect_err("delete against nothing");
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        let writer = files.create(id()).await.expect("create sends nothing");
        let error = writer.finish().await.expect_err("finish against nothing");
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
    }

    #[test]
    fn urls() {
        let dir = tempfile::tempdir().expect("tempdir");
        let default = dir.path().join("default");
        let files = ObjectFiles::from_url("", &default).expect("default");
        assert!(default.is_dir());
        assert!(files.describe().starts_with("local folder "), "{files:?}");

        let plain = dir.path().join("plain/nested");
        ObjectFiles::from_url(plain.to_str().expect("utf-8"), &default).expect("plain path");
        assert!(plain.is_dir());

        let by_url = dir.path().join("by url");
        let url = url::Url::from_file_path(&by_url).expect("file url");
        assert!(url.as_str().contains("by%20url"));
        ObjectFiles::from_url(url.as_str(), &default).expect("file url");
        assert!(by_url.is_dir());

        for wrong in ["gs://bucket", "http://example.com/x", "s3://", "s3:bucket"] {
            let error = ObjectFiles::from_url(wrong, &default).expect_err(wrong);
            assert!(
                error.to_string().contains("s3://bucket"),
                "{wrong}: {error}"
            );
        }
    }

    #[test]
    fn redacts_endpoints() {
        assert_eq!(
            redact("https://user:secret@s3.example.com:9000/?token=x"),
            "https://s3.example.com:9000/"
        );
        assert_eq!(redact("not a url"), "(an endpoint that is not a URL)");
    }
}
