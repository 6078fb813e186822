//! `aero guest-tools build`: cross-builds the Windows 7 AeroGPU drivers with mingw-w64
//! (guest-tools/build.sh) and writes the guest-tools ISO.

use std::path::PathBuf;
use std::process::ExitCode;

use aero_guest_tools::package::{PackageOptions, build_iso};
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct GuestToolsArgs {
    #[command(subcommand)]
    command: GuestToolsCommand,
}

#[derive(Subcommand, Debug)]
enum GuestToolsCommand {
    /// Build aerogpu.sys, the D3D9Ex UMDs and aerogpu_dbgctl (x86 and x64, test-signed) and
    /// write the ISO. Needs mingw-w64, openssl and osslsigncode (tests/install-deps.sh).
    Build {
        /// Where to write the ISO.
        #[arg(
            short = 'o',
            long,
            value_name = "FILE.iso",
            default_value = "target/aero-guest-tools.iso"
        )]
        out: PathBuf,
        /// Build directory for the driver binaries (and the generated signing key).
        #[arg(long, value_name = "DIR", default_value = "target/guest-tools")]
        work_dir: PathBuf,
    },
}

pub fn main(args: GuestToolsArgs) -> ExitCode {
    let GuestToolsCommand::Build { out, work_dir } = args.command;
    let opts = PackageOptions::new(out.clone(), work_dir);
    match build_iso(&opts, &mut |line| eprintln!("{line}")) {
        Ok(manifest) => {
            println!("wrote {} ({} files)", out.display(), manifest.len() + 1);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("aero: guest tools: {e}");
            ExitCode::from(2)
        }
    }
}
