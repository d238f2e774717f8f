//! A private PostgreSQL instance for tests that stop, stall or restart their
//! database: `initdb` into a temporary directory under /tmp (as the
//! `postgres` user when run as root), its own port and socket directory,
//! never the machine's shared server. Stopped (`-m immediate`) and removed
//! when dropped, after any stalled process is resumed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An initialised cluster, started or not.
pub struct PrivatePg {
    pub port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
}

impl PrivatePg {
    /// A new cluster on a free port, not started. `None` (after saying why)
    /// when PostgreSQL's server programs are not installed, unless
    /// `CONFAB_REQUIRE_TOOLS=1`, which makes that a failure.
    pub fn init() -> Option<PrivatePg> {
        let Some(bin) = server_bin_dir() else {
            assert!(
                std::env::var("CONFAB_REQUIRE_TOOLS").as_deref() != Ok("1"),
                "initdb not found (set CONFAB_PG_BINDIR): CONFAB_REQUIRE_TOOLS=1 forbids skipping"
            );
            eprintln!("SKIPPED: initdb not found (install PostgreSQL or set CONFAB_PG_BINDIR)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("confab-pg-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        if is_root() {
            run(Command::new("chown")
                .arg("postgres:postgres")
                .arg(dir.path()));
        }
        let pg = PrivatePg {
            port: super::free_port(),
            bin,
            dir,
        };
        run(pg
            .as_owner("initdb")
            .arg("-D")
            .arg(pg.data())
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
            .arg("--no-sync"));
        Some(pg)
    }

    /// [`PrivatePg::init`], then [`PrivatePg::start`].
    pub fn started() -> Option<PrivatePg> {
        let pg = Self::init()?;
        pg.start();
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Starts the server and waits until it accepts connections.
    pub fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60",
            self.port,
            self.dir.path().display()
        );
        run(self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "-t", "30", "-o", &options, "start"]));
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The postmaster and all its children (backends, background workers).
    pub fn pids(&self) -> Vec<u32> {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .expect("postmaster.pid (is the server running?)");
        let master: u32 = pid_file
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("pid in postmaster.pid");
        let mut pids = vec![master];
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if parent_of(pid) == Some(master) {
                pids.push(pid);
            }
        }
        pids
    }

    /// SIGSTOP to every process of the server: sockets stay open, the
    /// kernel keeps acknowledging, nothing answers.
    pub fn stall(&self) {
        assert!(self.signal("-STOP"), "cannot stop PostgreSQL");
    }

    /// SIGCONT: the stalled server goes on.
    pub fn resume(&self) {
        assert!(self.signal("-CONT"), "cannot resume PostgreSQL");
    }

    /// Signals the postmaster, then its children (a child may have just
    /// exited); whether the postmaster got it.
    fn signal(&self, sig: &str) -> bool {
        let mut master = false;
        for (i, pid) in self.pids().into_iter().enumerate() {
            let sent = Command::new("kill")
                .args([sig, &pid.to_string()])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            master |= i == 0 && sent;
        }
        master
    }

    /// `cmd` from the server's bin directory, as the cluster's owner.
    fn as_owner(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        if self.data().join("postmaster.pid").exists() {
            let _ = self.signal("-CONT");
            let _ = self
                .as_owner("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// `CONFAB_PG_BINDIR`, else the newest `/usr/lib/postgresql/*/bin` holding
/// `initdb`, else the directory of an `initdb` on `PATH`.
fn server_bin_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("CONFAB_PG_BINDIR") {
        return Some(PathBuf::from(dir)).filter(|d| d.join("initdb").exists());
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find(|d| Path::new(d).join("initdb").exists())
    })
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run command");
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}
