//! The `gpumem` command. All logic lives in the library (`gpumem_cli`);
//! this only parses arguments and turns errors into a message and exit code 1.
//! A reader that stops reading stdout early (`gpumem replay … | head -1`)
//! is not an error: the command ends quietly with status 0.

use std::process::ExitCode;

use clap::Parser;
use gpumem_cli::cli::{Cli, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let result = run(cli, &mut stdout.lock(), &mut stderr.lock());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("gpumem: error: {err}");
            ExitCode::FAILURE
        }
    }
}
