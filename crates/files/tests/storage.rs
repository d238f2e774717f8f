//! `ObjectFiles` against a local folder (a temporary directory) and, when
//! `CONFAB_TEST_S3_URL` is set (e.g. `s3://confab-test/run-1234`, with the
//! `AWS_*` variables of the store: `eval "$(tests/s3/start.sh)"` starts a
//! local moto server and prints them), against that S3 bucket and prefix.
//! Every check runs on both: `local_<check>` and `s3_<check>`. Without
//! `CONFAB_TEST_S3_URL`, the `s3_` tests pass without running, unless
//! `CONFAB_TEST_REQUIRE_S3=1`: then they fail.

use std::path::PathBuf;
use std::time::Duration;

use confab_domain::AttachmentId;
use confab_files::ObjectFiles;
use confab_ports::{ByteRange, FileReader, FileStorage, StoreError};
use futures_util::StreamExt as _;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::ObjectStore;

const MIB: usize = 1024 * 1024;

/// A storage under test, and how to see what it holds besides its files.
struct Backend {
    files: ObjectFiles,
    place: Place,
}

enum Place {
    /// The folder (its temporary directory lives as long as the backend).
    Local(tempfile::TempDir),
    /// The bucket, seen directly, and the prefix of the keys.
    S3 {
        bucket: object_store::aws::AmazonS3,
        prefix: String,
    },
}

impl Backend {
    fn local() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("files");
        let files = ObjectFiles::from_url(folder.to_str().expect("utf-8 path"), &PathBuf::new())
            .expect("local storage");
        Self {
            files,
            place: Place::Local(dir),
        }
    }

    /// The S3 storage of `CONFAB_TEST_S3_URL`, or `None` when it is not set
    /// (a failure instead when `CONFAB_TEST_REQUIRE_S3=1`).
    fn s3() -> Option<Self> {
        let Ok(url) = std::env::var("CONFAB_TEST_S3_URL") else {
            assert!(
                std::env::var("CONFAB_TEST_REQUIRE_S3").as_deref() != Ok("1"),
                "CONFAB_TEST_REQUIRE_S3=1 but CONFAB_TEST_S3_URL is not set"
            );
            eprintln!("CONFAB_TEST_S3_URL is not set: S3 test not run");
            return None;
        };
        let files = ObjectFiles::from_url(&url, &PathBuf::new()).expect("S3 storage");
        let location = url.strip_prefix("s3://").expect("an s3:// URL");
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        let bucket = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .expect("S3 bucket");
        Some(Self {
            files,
            place: Place::S3 {
                bucket,
                prefix: prefix.trim_matches('/').to_owned(),
            },
        })
    }

    /// What is stored under a name that starts with `id` (a finished file,
    /// a local file written aside).
    async fn leftovers(&self, id: AttachmentId) -> Vec<String> {
        let id = id.to_string();
        match &self.place {
            Place::Local(dir) => std::fs::read_dir(dir.path().join("files"))
                .expect("read the folder")
                .map(|entry| {
                    entry
                        .expect("folder entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .filter(|name| name.starts_with(&id))
                .collect(),
            Place::S3 { bucket, prefix } => {
                let within = (!prefix.is_empty()).then(|| Path::from(prefix.as_str()));
                bucket
                    .list(within.as_ref())
                    .map(|meta| meta.expect("list").location.to_string())
                    .filter(|key| std::future::ready(key.contains(&id)))
                    .collect()
                    .await
            }
        }
    }

    /// Whether the folder (local only) holds anything at all.
    fn folder_is_empty(&self) -> bool {
        match &self.place {
            Place::Local(dir) => std::fs::read_dir(dir.path().join("files"))
                .expect("read the folder")
                .next()
                .is_none(),
            Place::S3 { .. } => true,
        }
    }
}

fn new_id() -> AttachmentId {
    AttachmentId::from_uuid(uuid::Uuid::now_v7())
}

/// `len` bytes that differ with `seed` and with their position.
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// Writes `content` in chunks of the sizes `sizes` (cycled) and finishes.
async fn store(files: &ObjectFiles, id: AttachmentId, content: &[u8], sizes: &[usize]) {
    let mut writer = files.create(id).await.expect("create");
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at == content.len() {
            break;
        }
        let end = (at + size).min(content.len());
        writer
            .write(content[at..end].to_vec())
            .await
            .expect("write");
        at = end;
    }
    writer.finish().await.expect("finish");
}

async fn read_all(mut reader: Box<dyn FileReader>) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.expect("next chunk") {
        assert!(!chunk.is_empty(), "an empty chunk");
        out.extend_from_slice(&chunk);
    }
    out
}

async fn read(files: &ObjectFiles, id: AttachmentId, range: Option<ByteRange>) -> Vec<u8> {
    read_all(files.open(id, range).await.expect("open")).await
}

async fn assert_not_found(files: &ObjectFiles, id: AttachmentId) {
    match files.open(id, None).await {
        Err(StoreError::NotFound) => {}
        Err(e) => panic!("open: expected NotFound, got {e:?}"),
        Ok(_) => panic!("open: expected NotFound, the file is there"),
    }
}

// ---- the checks, each for any backend ----

/// A file of several parts, in chunks of several sizes (one bigger than a
/// part), read whole and in ranges; not readable before `finish`.
async fn large_file_round_trip(backend: Backend) {
    let files = &backend.files;
    let id = new_id();
    let content = data(13 * MIB + 12_345, 1);
    let mut writer = files.create(id).await.expect("create");
    let mut at = 0;
    for size in [1, 64 * 1024, 7 * MIB, 3 * MIB + 17, 100_000] {
        writer
            .write(content[at..at + size].to_vec())
            .await
            .expect("write");
        at += size;
    }
    assert_not_found(files, id).await;
    for piece in content[at..].chunks(64 * 1024) {
        writer.write(piece.to_vec()).await.expect("write");
    }
    writer.write(Vec::new()).await.expect("write nothing");
    assert_not_found(files, id).await;
    writer.finish().await.expect("finish");

    assert!(read(files, id, None).await == content, "whole file differs");
    // Across the first part's end, the last bytes, the first byte.
    for (start, end) in [
        (5 * MIB as u64 - 10, 5 * MIB as u64 + 70_000),
        (content.len() as u64 - 5, content.len() as u64),
        (0, 1),
    ] {
        let got = read(files, id, Some(ByteRange { start, end })).await;
        assert!(
            got == content[start as usize..end as usize],
            "range {start}..{end} differs ({} bytes read)",
            got.len()
        );
    }
    assert_eq!(backend.leftovers(id).await.len(), 1);
}

/// Files under a part (one request), empty included.
async fn small_file_round_trip(backend: Backend) {
    let files = &backend.files;
    let id = new_id();
    let content = data(300_001, 2);
    store(files, id, &content, &[1000, 7, 65_536]).await;
    assert!(read(files, id, None).await == content);
    let range = read(
        files,
        id,
        Some(ByteRange {
            start: 999,
            end: 1_006,
        }),
    )
    .await;
    assert_eq!(range, content[999..1_006]);
    // A range past the end is cut at the end; one that starts past it is
    // refused (not `NotFound`: the file is there).
    let tail = read(
        files,
        id,
        Some(ByteRange {
            start: 299_990,
            end: 400_000,
        }),
    )
    .await;
    assert_eq!(tail, content[299_990..]);
    match files
        .open(
            id,
            Some(ByteRange {
                start: 300_001,
                end: 300_002,
            }),
        )
        .await
    {
        Err(StoreError::Other(_)) => {}
        Err(e) => panic!("a range past the end: expected Other, got {e:?}"),
        Ok(_) => panic!("a range past the end was accepted"),
    }

    let empty = new_id();
    let writer = files.create(empty).await.expect("create");
    writer.finish().await.expect("finish");
    assert!(read(files, empty, None).await.is_empty());

    // Exactly one part.
    let one_part = new_id();
    let content = data(5 * MIB, 3);
    store(files, one_part, &content, &[MIB]).await;
    assert!(read(files, one_part, None).await == content);
}

/// An aborted writer, before and after its first part, leaves nothing.
async fn abort_leaves_nothing(backend: Backend) {
    let files = &backend.files;
    for len in [1_000, 11 * MIB] {
        let id = new_id();
        let mut writer = files.create(id).await.expect("create");
        for piece in data(len, 4).chunks(256 * 1024) {
            writer.write(piece.to_vec()).await.expect("write");
        }
        writer.abort().await.expect("abort");
        assert_not_found(files, id).await;
        assert_eq!(backend.leftovers(id).await, Vec::<String>::new());
    }
    assert!(backend.folder_is_empty(), "a stray file in the folder");
}

/// A writer dropped without `finish` or `abort` leaves nothing readable,
/// and (in the background) nothing stored.
async fn dropped_writer_leaves_nothing(backend: Backend) {
    let files = &backend.files;
    for len in [1_000, 11 * MIB] {
        let id = new_id();
        let mut writer = files.create(id).await.expect("create");
        for piece in data(len, 5).chunks(512 * 1024) {
            writer.write(piece.to_vec()).await.expect("write");
        }
        drop(writer);
        assert_not_found(files, id).await;
        let mut left = backend.leftovers(id).await;
        for _ in 0..50 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = backend.leftovers(id).await;
        }
        assert_eq!(left, Vec::<String>::new());
        assert_not_found(files, id).await;
    }
    assert!(backend.folder_is_empty(), "a stray file in the folder");
}

/// Deleting twice is fine; the file is gone after the first.
async fn delete_twice(backend: Backend) {
    let files = &backend.files;
    let id = new_id();
    store(files, id, b"hello", &[2]).await;
    assert_eq!(read(files, id, None).await, b"hello");
    files.delete(id).await.expect("delete");
    assert_not_found(files, id).await;
    files.delete(id).await.expect("delete again");
    files
        .delete(new_id())
        .await
        .expect("delete of a file never written");
    assert_eq!(backend.leftovers(id).await, Vec::<String>::new());
}

/// Opening a file that was never written is `NotFound`, with or without a
/// range.
async fn open_missing(backend: Backend) {
    let files = &backend.files;
    let id = new_id();
    assert_not_found(files, id).await;
    match files.open(id, Some(ByteRange { start: 0, end: 10 })).await {
        Err(StoreError::NotFound) => {}
        Err(e) => panic!("expected NotFound, got {e:?}"),
        Ok(_) => panic!("expected NotFound"),
    }
}

/// One `#[tokio::test]` per backend for each check.
macro_rules! on_every_backend {
    ($($check:ident),* $(,)?) => {
        mod local {
            $(
                #[tokio::test]
                async fn $check() {
                    super::$check(super::Backend::local()).await;
                }
            )*
        }
        mod s3 {
            $(
                #[tokio::test]
                async fn $check() {
                    if let Some(backend) = super::Backend::s3() {
                        super::$check(backend).await;
                    }
                }
            )*
        }
    };
}

on_every_backend!(
    large_file_round_trip,
    small_file_round_trip,
    abort_leaves_nothing,
    dropped_writer_leaves_nothing,
    delete_twice,
    open_missing,
);

// ---- memory, by hand ----

/// This process's resident set and its peak, in KiB (Linux).
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a VmRSS/VmHWM line")
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Writes 60 MiB in 64 KiB chunks, then reads it back, and checks that the
/// resident set's peak grew by less than 20 MiB (a writer holds at most
/// about 15 MiB: one part buffered, two in flight). Run by hand, one at a
/// time so that nothing else runs in the process:
/// `cargo test -p confab-files --test storage -- --ignored --exact memory::local`
/// (and `memory::s3` with the S3 variables set). Resets the peak first
/// (`/proc/self/clear_refs`).
async fn memory_stays_bounded(backend: Backend) {
    let files = &backend.files;
    let chunk = data(64 * 1024, 6);
    // `count` times `chunk`, as one file.
    let write = |count: usize| {
        let chunk = &chunk;
        async move {
            let id = new_id();
            let mut writer = files.create(id).await.expect("create");
            for _ in 0..count {
                writer.write(chunk.clone()).await.expect("write");
            }
            writer.finish().await.expect("finish");
            id
        }
    };
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak resident set");
    let (cold, _) = rss_kib();
    // Warm up (the blocking pool's threads, the HTTP client's connections)
    // before the baseline: a small file, then one of two parts.
    write(1).await;
    write(100).await;
    let (warm, warm_peak) = rss_kib();

    let id = write(60 * 16).await;
    let (after_write, write_peak) = rss_kib();

    let mut reader = files.open(id, None).await.expect("open");
    let mut total = 0;
    while let Some(chunk) = reader.next_chunk().await.expect("read") {
        total += chunk.len();
    }
    assert_eq!(total, 60 * MIB);
    let (after_read, peak) = rss_kib();
    eprintln!(
        "RSS KiB: before any write {cold}; after a 64 KiB and a 6.25 MiB file {warm} \
         (peak {warm_peak}); after writing 60 MiB {after_write} (peak {write_peak}, \
         +{} over the warm baseline); after reading it {after_read} (peak {peak}); \
         peak over the cold baseline +{}",
        write_peak.saturating_sub(warm),
        peak.saturating_sub(cold)
    );
    // Against the resident set before any file was written: the warm-up's
    // own buffers count too.
    assert!(
        peak.saturating_sub(cold) < 20 * 1024,
        "peak resident set grew by {} KiB",
        peak - cold
    );
}

mod memory {
    #[tokio::test]
    #[ignore = "measures the process's memory: run alone, by hand"]
    async fn local() {
        super::memory_stays_bounded(super::Backend::local()).await;
    }

    #[tokio::test]
    #[ignore = "measures the process's memory: run alone, by hand"]
    async fn s3() {
        if let Some(backend) = super::Backend::s3() {
            super::memory_stays_bounded(backend).await;
        }
    }
}
