//! The `aero` command: desktop window and headless runner; guest-tools builder later.

mod demo;
mod disk;
mod drives;
mod guest_tools;
mod headless;
mod image_cmds;
mod machine_args;
mod monitor;
mod nic;
mod run;
mod scenario;
mod screen_watch;
mod slirp;
mod tap;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "aero", version, about = "Aero: an x86 PC emulator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Boot a guest without a window (deterministic by default).
    Headless(Box<headless::HeadlessArgs>),
    /// Boot a guest in a window, with keyboard, mouse, sound and gamepads.
    Run(Box<run::RunArgs>),
    /// Create or inspect disk images (qcow2, overlays).
    Disk(disk::DiskArgs),
    /// Rebuild the built-in demo guest (the default guest of `aero run`).
    Demo(demo::DemoArgs),
    /// Build the Windows 7 guest drivers and their ISO.
    #[command(name = "guest-tools")]
    GuestTools(guest_tools::GuestToolsArgs),
    /// Compare two PNG screenshots (exit 0 equal, 1 different, 2 bad input).
    Compare(image_cmds::CompareArgs),
    /// Make openQA needles from screenshots.
    Needle(image_cmds::NeedleArgs),
    /// Run a test scenario (machine + steps in TOML); JUnit XML with --junit.
    Test(scenario::TestArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AERO_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: logs piped to a file stay plain text.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and usage errors with exit 2.
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    match cli.command {
        Command::Headless(args) => headless::main(*args),
        Command::Run(args) => run::main(*args),
        Command::Disk(args) => disk::main(args),
        Command::Demo(args) => demo::main(args),
        Command::GuestTools(args) => guest_tools::main(args),
        Command::Compare(args) => image_cmds::compare_main(args),
        Command::Needle(args) => image_cmds::needle_main(args),
        Command::Test(args) => scenario::main(args),
    }
}
