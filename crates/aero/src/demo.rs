//! `aero demo build`: assembles the built-in demo guest (firmware/src/demo) into the file
//! that ships in `assets/demo/`, or into a bootable raw disk image.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(subcommand)]
    command: DemoCommand,
}

#[derive(Subcommand, Debug)]
enum DemoCommand {
    /// Rebuild the demo guest from its source (run from the repository root after changing
    /// firmware/src/demo; a unit test fails while the shipped file is stale).
    Build {
        /// Where to write the program (boot sector + payload).
        #[arg(short, long, default_value = "assets/demo/aero-demo.bin")]
        output: PathBuf,
        /// Write a whole raw disk image instead (bootable with `aero headless FILE` or QEMU).
        #[arg(long)]
        disk: bool,
    },
}

pub fn main(args: DemoArgs) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: DemoArgs) -> anyhow::Result<()> {
    let DemoCommand::Build { output, disk } = args.command;
    let program = aero_firmware::demo::build_demo_program()?;
    let bytes = if disk {
        aero_firmware::demo::demo_disk_from(&program)
    } else {
        program
    };
    std::fs::write(&output, &bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
    println!("wrote {} ({} bytes)", output.display(), bytes.len());
    Ok(())
}
