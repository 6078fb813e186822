//! `aero guest-tools build`: runs `guest-tools/build.sh` (mingw-w64, openssl,
//! osslsigncode), then writes the guest tools ISO:
//!
//! ```text
//! /setup.cmd  /uninstall.cmd  /README.txt  /manifest.json  /certs/aero-test.cer
//! /drivers/x86/aerogpu/{aerogpu.sys, aerogpu_d3d9.dll, aerogpu.inf, aerogpu_dbgctl.exe}
//! /drivers/amd64/aerogpu/{aerogpu.sys, aerogpu_d3d9_x64.dll, aerogpu_d3d9.dll, aerogpu.inf,
//!                         aerogpu_dbgctl.exe}
//! ```
//!
//! Deterministic for a given source tree, signing key and epoch (SOURCE_DATE_EPOCH).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aero_iso::{IsoBuilder, IsoError, IsoOptions};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// Debian packages the build needs (printed when something is missing).
pub const REQUIRED_PACKAGES: &str = "gcc-mingw-w64-i686 gcc-mingw-w64-x86-64 g++-mingw-w64-i686 \
g++-mingw-w64-x86-64 binutils-mingw-w64-i686 binutils-mingw-w64-x86-64 openssl osslsigncode";

#[derive(Debug, Error)]
pub enum PackageError {
    #[error(
        "the Windows driver toolchain is missing: {detail}\n  install it with: apt-get install {REQUIRED_PACKAGES}"
    )]
    MissingToolchain { detail: String },
    #[error("guest-tools/build.sh failed ({status}):\n{log}")]
    BuildFailed { status: String, log: String },
    #[error("cannot run {what}: {source}")]
    Spawn {
        what: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("ISO: {0}")]
    Iso(#[from] IsoError),
}

#[derive(Clone, Debug)]
pub struct PackageOptions {
    /// Where the ISO goes.
    pub iso_path: PathBuf,
    /// Build directory for build.sh outputs (and, by default, the signing key).
    pub work_dir: PathBuf,
    /// Signing key directory (generated on first use); None = work_dir/signing-key.
    pub sign_key_dir: Option<PathBuf>,
    /// Timestamp for the image and signatures (SOURCE_DATE_EPOCH).
    pub epoch: i64,
}

impl PackageOptions {
    /// Defaults: `target/guest-tools` as work dir, SOURCE_DATE_EPOCH or a fixed epoch.
    pub fn new(iso_path: PathBuf, work_dir: PathBuf) -> Self {
        let epoch = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_700_000_000);
        Self {
            iso_path,
            work_dir,
            sign_key_dir: None,
            epoch,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestEntry {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

/// The files on the image (relative path in the build output, path on the ISO).
const LAYOUT: &[(&str, &str)] = &[
    ("setup.cmd", "setup.cmd"),
    ("uninstall.cmd", "uninstall.cmd"),
    ("certs/aero-test.cer", "certs/aero-test.cer"),
    ("x86/aerogpu/aerogpu.sys", "drivers/x86/aerogpu/aerogpu.sys"),
    (
        "x86/aerogpu/aerogpu_d3d9.dll",
        "drivers/x86/aerogpu/aerogpu_d3d9.dll",
    ),
    ("x86/aerogpu/aerogpu.inf", "drivers/x86/aerogpu/aerogpu.inf"),
    (
        "x86/aerogpu/aerogpu_dbgctl.exe",
        "drivers/x86/aerogpu/aerogpu_dbgctl.exe",
    ),
    (
        "amd64/aerogpu/aerogpu.sys",
        "drivers/amd64/aerogpu/aerogpu.sys",
    ),
    (
        "amd64/aerogpu/aerogpu_d3d9_x64.dll",
        "drivers/amd64/aerogpu/aerogpu_d3d9_x64.dll",
    ),
    (
        "amd64/aerogpu/aerogpu_d3d9.dll",
        "drivers/amd64/aerogpu/aerogpu_d3d9.dll",
    ),
    (
        "amd64/aerogpu/aerogpu.inf",
        "drivers/amd64/aerogpu/aerogpu.inf",
    ),
    (
        "amd64/aerogpu/aerogpu_dbgctl.exe",
        "drivers/amd64/aerogpu/aerogpu_dbgctl.exe",
    ),
];

const README: &str = "Aero guest tools for Windows 7 SP1 (x86 and x64)\r\n\
\r\n\
Install: run setup.cmd as Administrator. It trusts certs\\aero-test.cer (a test\r\n\
certificate made when these tools were built), offers to enable test signing on\r\n\
64-bit Windows (reboot, then run setup.cmd again), and installs the AeroGPU display\r\n\
driver with pnputil. Remove it with uninstall.cmd.\r\n\
\r\n\
drivers\\<arch>\\aerogpu\\aerogpu_dbgctl.exe --status shows the driver/device state.\r\n\
manifest.json lists every file with its SHA-256.\r\n\
\r\n\
Status: the drivers have not been validated on Windows yet (see the project README).\r\n";

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// manifest.json text for `entries` (stable order and formatting).
pub fn manifest_json(entries: &[ManifestEntry]) -> String {
    let mut s = String::from("{\n  \"files\": [\n");
    for (i, e) in entries.iter().enumerate() {
        s.push_str(&format!(
            "    {{ \"path\": \"{}\", \"size\": {}, \"sha256\": \"{}\" }}{}\n",
            e.path,
            e.size,
            e.sha256,
            if i + 1 < entries.len() { "," } else { "" }
        ));
    }
    s.push_str("  ]\n}\n");
    s
}

fn guest_tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Runs build.sh into `opts.work_dir`, forwarding its progress lines.
pub fn build_drivers(
    opts: &PackageOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(), PackageError> {
    let script = guest_tools_dir().join("build.sh");
    let key_dir = opts
        .sign_key_dir
        .clone()
        .unwrap_or_else(|| opts.work_dir.join("signing-key"));
    let mut child = Command::new("sh")
        .arg(&script)
        .arg(&opts.work_dir)
        .env("AERO_SIGN_DIR", &key_dir)
        .env("SOURCE_DATE_EPOCH", opts.epoch.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| PackageError::Spawn {
            what: script.display().to_string(),
            source,
        })?;
    let mut log = String::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            progress(&line);
            log.push_str(&line);
            log.push('\n');
        }
    }
    let mut err_text = String::new();
    if let Some(mut err) = child.stderr.take() {
        use std::io::Read;
        let _ = err.read_to_string(&mut err_text);
    }
    let status = child.wait().map_err(|source| PackageError::Spawn {
        what: script.display().to_string(),
        source,
    })?;
    if status.code() == Some(127) {
        return Err(PackageError::MissingToolchain {
            detail: err_text.trim().to_string(),
        });
    }
    if !status.success() {
        log.push_str(&err_text);
        return Err(PackageError::BuildFailed {
            status: status.to_string(),
            log,
        });
    }
    Ok(())
}

/// Builds the drivers and writes the ISO; returns the manifest.
pub fn build_iso(
    opts: &PackageOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<ManifestEntry>, PackageError> {
    build_drivers(opts, progress)?;
    progress("[iso] writing image");
    let mut iso = IsoBuilder::new();
    let mut manifest = Vec::new();
    let add =
        |iso: &mut IsoBuilder, manifest: &mut Vec<ManifestEntry>, path: &str, data: Vec<u8>| {
            manifest.push(ManifestEntry {
                path: path.to_string(),
                size: data.len() as u64,
                sha256: sha256_hex(&data),
            });
            iso.add_file(path, data)
        };
    add(
        &mut iso,
        &mut manifest,
        "README.txt",
        README.as_bytes().to_vec(),
    )?;
    for (src, dst) in LAYOUT {
        let p = opts.work_dir.join(src);
        let data = std::fs::read(&p).map_err(|source| PackageError::Io {
            path: p.clone(),
            source,
        })?;
        add(&mut iso, &mut manifest, dst, data)?;
    }
    manifest.sort_by(|a, b| a.path.cmp(&b.path));
    iso.add_file("manifest.json", manifest_json(&manifest).into_bytes())?;
    let img = iso.build(&IsoOptions {
        volume_id: "AERO_GUEST_TOOLS".into(),
        epoch: opts.epoch,
    })?;
    if let Some(dir) = opts.iso_path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| PackageError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(&opts.iso_path, img).map_err(|source| PackageError::Io {
        path: opts.iso_path.clone(),
        source,
    })?;
    progress(&format!("[iso] {}", opts.iso_path.display()));
    Ok(manifest)
}
