//! A small, deterministic ISO9660 (level 2 names) + Joliet writer for the guest tools CD.
//!
//! Every timestamp comes from the caller (`IsoOptions::epoch`, e.g. SOURCE_DATE_EPOCH),
//! files are sorted by name, and nothing else varies: the same input gives the same bytes.
//! Both directory trees (primary and Joliet) point at one copy of each file's data.
#![forbid(unsafe_code)]

mod date;
mod layout;
mod names;
mod volume;

use std::collections::BTreeMap;

use thiserror::Error;

pub use date::civil_from_epoch;

pub const SECTOR: usize = 2048;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum IsoError {
    #[error("invalid path {0:?} (empty component, '.', '..' or not relative)")]
    BadPath(String),
    #[error("{0:?} is both a file and a directory")]
    FileDirConflict(String),
    #[error("duplicate file {0:?}")]
    Duplicate(String),
    #[error("name {0:?} is too long for Joliet (64 UCS-2 units)")]
    NameTooLong(String),
    #[error("two names map to the same ISO9660 name {0:?}")]
    IsoNameCollision(String),
    #[error("directory tree deeper than 8 levels at {0:?}")]
    TooDeep(String),
    #[error("image larger than the 32-bit sector space")]
    TooLarge,
}

#[derive(Clone, Debug)]
pub struct IsoOptions {
    /// Volume label (upper-cased and filtered for the primary descriptor).
    pub volume_id: String,
    /// Seconds since 1970-01-01 UTC for every timestamp in the image.
    pub epoch: i64,
}

/// Files to put on the image: `path` uses '/' separators, relative to the root.
#[derive(Default, Debug)]
pub struct IsoBuilder {
    files: BTreeMap<String, Vec<u8>>,
}

impl IsoBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_file(&mut self, path: &str, data: Vec<u8>) -> Result<(), IsoError> {
        let parts: Vec<&str> = path.split('/').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return Err(IsoError::BadPath(path.into()));
        }
        if parts.len() > 8 {
            return Err(IsoError::TooDeep(path.into()));
        }
        for p in &parts {
            if p.encode_utf16().count() > 64 {
                return Err(IsoError::NameTooLong((*p).into()));
            }
        }
        if self.files.contains_key(path) {
            return Err(IsoError::Duplicate(path.into()));
        }
        self.files.insert(path.to_string(), data);
        Ok(())
    }

    /// Writes the image.
    pub fn build(&self, opts: &IsoOptions) -> Result<Vec<u8>, IsoError> {
        let tree = layout::Tree::from_files(&self.files)?;
        volume::write_image(&tree, &self.files, opts)
    }
}
