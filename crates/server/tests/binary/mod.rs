//! What the tests that run the real `confab` binary share: the binary, a
//! guard that stops a started server, a free port, and a CLI call that must
//! succeed.

#![allow(dead_code)] // each test file uses a part of it

pub mod postgres;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command};

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

/// `confab ARGS` on `db`, which must succeed; its stdout, trimmed.
pub fn confab_ok(db: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", db)
        .output()
        .expect("run confab");
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}
