//! Creating images: persistent copy-on-write overlays (`aero disk create --backing`).

use std::path::{Path, PathBuf};

use crate::image::probe_format;
use crate::{OpenOptions, Qcow2CreateOptions, StorageError, create_qcow2, open_image};

/// QEMU's default cluster size (64 KiB).
const DEFAULT_CLUSTER_BITS: u32 = 16;

/// Creates `overlay`, a new qcow2 image whose unwritten sectors read from `base` (raw, qcow2
/// or VHD, format detected and recorded). The base is never written through the overlay.
/// When both files share a directory the bare file name is stored, so the pair can be moved
/// together; otherwise the base's absolute path is stored. Never overwrites an existing file.
pub fn create_qcow2_overlay(base: &Path, overlay: &Path) -> Result<(), StorageError> {
    let base_str = base.display().to_string();
    let io = |e| StorageError::Io {
        path: base_str.clone(),
        error: e,
    };
    let base_abs = base.canonicalize().map_err(io)?;
    let format = probe_format(&base_abs)?;
    let size = {
        let dev = open_image(
            &base_abs,
            &OpenOptions {
                read_only: true,
                format: Some(format),
                ..Default::default()
            },
        )?;
        dev.sector_count() * dev.sector_size() as u64
    };
    let backing_name = stored_backing_name(&base_abs, overlay);
    let opts = Qcow2CreateOptions {
        size,
        cluster_bits: DEFAULT_CLUSTER_BITS,
        backing: Some((backing_name, format)),
    };
    create_qcow2(overlay, &opts)
}

fn stored_backing_name(base_abs: &Path, overlay: &Path) -> String {
    let overlay_dir: PathBuf = match overlay.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let same_dir = overlay_dir
        .canonicalize()
        .ok()
        .is_some_and(|d| Some(d.as_path()) == base_abs.parent());
    match (same_dir, base_abs.file_name()) {
        (true, Some(name)) => name.to_string_lossy().into_owned(),
        _ => base_abs.display().to_string(),
    }
}
