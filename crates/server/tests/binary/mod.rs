//! What the tests that run the real `confab` binary share: the binary, a
//! guard that stops a started server, a free port, a CLI call that must
//! succeed, and one raw HTTP/1.1 request.

#![allow(dead_code)] // each test file uses a part of it

pub mod postgres;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_confab");

/// A running `confab serve`, killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Whether a server accepts connections at 127.0.0.1:`port`. A connection
/// to itself does not count: while nothing listens there, the kernel may
/// pick `port` itself (an ephemeral port, as [`free_port`] gives) as the
/// connecting socket's own, and TCP then connects the socket to itself; a
/// wait loop taking that for the server went on before it listened (seen
/// once in CI: the next request was refused).
pub fn accepts(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok_and(|s| match (s.local_addr(), s.peer_addr()) {
        (Ok(local), Ok(peer)) => local != peer,
        _ => false,
    })
}

/// `confab serve` on `db` at 127.0.0.1:`port`, its log (at `RUST_LOG`
/// `level`) written to `log`; returns once it accepts connections.
pub fn serve_logging(db: &Path, port: u16, level: &str, log: &Path) -> Server {
    let server = Server(
        Command::new(BIN)
            .arg("serve")
            .env("DATABASE_URL", db)
            .env("CONFAB_LISTEN", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", level)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log file"))
            .spawn()
            .expect("spawn serve"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !accepts(port) {
        assert!(Instant::now() < deadline, "confab serve did not listen");
        sleep(Duration::from_millis(50));
    }
    server
}

/// `confab ARGS` on `db` (a SQLite path or a PostgreSQL URL), which must
/// succeed; its stdout, trimmed.
pub fn confab_ok(db: impl AsRef<OsStr>, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", db.as_ref())
        .output()
        .expect("run confab");
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// Sends one request over a plain socket: `head` is the request line and
/// any headers (without the final blank line), then `Host`,
/// `Connection: close` and the body's `Content-Length` are added. Returns
/// the status, the response head and the body.
pub fn raw_request(port: u16, head: &str, body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        s,
        "{head}\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    s.read_to_string(&mut response).expect("read");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("status line");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .map_or((response.clone(), String::new()), |(h, b)| {
            (h.to_owned(), b.to_owned())
        });
    (status, head, body)
}
