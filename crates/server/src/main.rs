//! The `jobdeck` binary: parses the command line and hands over to the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    jobdeck_server::cli::run()
}
