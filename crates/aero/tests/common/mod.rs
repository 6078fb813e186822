//! Shared by the guest tests: where `tests/images/build.sh` leaves the guest images.
#![allow(dead_code)]

use std::path::PathBuf;

/// `${XDG_CACHE_HOME:-$HOME/.cache}/aero/images`.
pub fn images_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME must be set");
    cache.join("aero/images")
}

/// A guest image; the test suite's setup builds them, so a missing one is a failure.
pub fn image(name: &str) -> PathBuf {
    let p = images_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `bash tests/images/build.sh` (tests/test.sh does)",
        p.display()
    );
    p
}
