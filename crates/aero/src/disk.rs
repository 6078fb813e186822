//! `aero disk`: create and inspect disk images (qcow2 blank disks, copy-on-write overlays).

use std::path::PathBuf;
use std::process::ExitCode;

use aero_storage::{
    OpenOptions, Qcow2CreateOptions, create_qcow2, create_qcow2_overlay, open_image, probe_format,
};
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct DiskArgs {
    #[command(subcommand)]
    command: DiskCommand,
}

#[derive(Subcommand, Debug)]
enum DiskCommand {
    /// Create a qcow2 image: blank with --size, or an overlay of --backing (its writes stay
    /// in the new file, the base image is never written).
    Create {
        /// Size of a blank disk: bytes, or with a K, M, G or T suffix (e.g. 40G).
        #[arg(
            long,
            value_name = "SIZE",
            conflicts_with = "backing",
            required_unless_present = "backing"
        )]
        size: Option<String>,
        /// Base image (raw, qcow2 or VHD) of a copy-on-write overlay.
        #[arg(long, value_name = "BASE")]
        backing: Option<PathBuf>,
        /// The image to create (never overwritten if it exists).
        file: PathBuf,
    },
    /// Print an image's format and size.
    Info { file: PathBuf },
}

/// Parses "40G", "512M", "1024" (bytes) into bytes.
fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| anyhow::anyhow!("--size {text:?}: expected a number like 40G"))?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => anyhow::bail!("--size {text:?}: unknown unit {unit:?} (use K, M, G or T)"),
    };
    let bytes = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| anyhow::anyhow!("--size {text:?} is too large"))?;
    anyhow::ensure!(
        bytes > 0 && bytes % 512 == 0,
        "--size must be a positive multiple of 512 bytes"
    );
    Ok(bytes)
}

fn run(args: DiskArgs) -> anyhow::Result<()> {
    match args.command {
        DiskCommand::Create {
            size,
            backing,
            file,
        } => {
            if let Some(base) = backing {
                create_qcow2_overlay(&base, &file)?;
                println!(
                    "created {} (qcow2 overlay of {})",
                    file.display(),
                    base.display()
                );
            } else {
                let bytes = parse_size(size.as_deref().unwrap_or_default())?;
                create_qcow2(
                    &file,
                    &Qcow2CreateOptions {
                        size: bytes,
                        cluster_bits: 16,
                        backing: None,
                    },
                )?;
                println!("created {} (qcow2, {} bytes)", file.display(), bytes);
            }
        }
        DiskCommand::Info { file } => {
            let format = probe_format(&file)?;
            let dev = open_image(
                &file,
                &OpenOptions {
                    read_only: true,
                    format: Some(format),
                    ..Default::default()
                },
            )?;
            println!(
                "{}: {format:?}, {} bytes ({} sectors of {})",
                file.display(),
                dev.sector_count() * u64::from(dev.sector_size()),
                dev.sector_count(),
                dev.sector_size()
            );
        }
    }
    Ok(())
}

pub fn main(args: DiskArgs) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("40G").unwrap(), 40 << 30);
        assert_eq!(parse_size("512m").unwrap(), 512 << 20);
        assert_eq!(parse_size("1024").unwrap(), 1024);
        assert!(parse_size("0").is_err());
        assert!(parse_size("100").is_err(), "not whole sectors");
        assert!(parse_size("5X").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(parse_size("").is_err());
    }
}
