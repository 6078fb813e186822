//! Library side of the `aero` binary, shared with its integration tests.
#![forbid(unsafe_code)]

pub mod audio_file;
pub mod imagediff;
pub mod needle;
pub mod screenshot;
