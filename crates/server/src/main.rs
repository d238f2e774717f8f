//! The `confab` binary: see `confab --help`.

/// mimalloc instead of the system's allocator: a request allocates a few
/// hundred times (strings, rows, futures), and glibc's `malloc` and `free`
/// cost a fifth of the server's instructions per request
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    confab_server::cli::main()
}
