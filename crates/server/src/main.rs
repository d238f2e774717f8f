//! The `confab` binary: see `confab --help`.

fn main() -> std::process::ExitCode {
    confab_server::cli::main()
}
