//! Why a submission failed, and which ERROR_CODE the guest sees for it.

use aero_protocol::pci::ErrorCode;
use thiserror::Error;

use super::memory::GuestMemoryError;

/// A rejected submission or packet. The device latches [`SubmitError::code`] into
/// ERROR_CODE and carries on with the next submission.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SubmitError {
    #[error("ring: {0}")]
    Ring(&'static str),
    #[error("submit descriptor: {0}")]
    Descriptor(&'static str),
    #[error("allocation table: {0}")]
    AllocTable(#[from] AllocTableError),
    #[error("command stream header: {0}")]
    StreamHeader(&'static str),
    #[error("packet at byte {offset:#x} (opcode {opcode:#x}): {kind}")]
    Packet {
        offset: usize,
        opcode: u32,
        kind: PacketError,
    },
    #[error("{what} exceeds the device limit")]
    Limit { what: &'static str },
    #[error(transparent)]
    Memory(#[from] GuestMemoryError),
}

impl SubmitError {
    pub fn code(&self) -> ErrorCode {
        match self {
            SubmitError::Ring(_) | SubmitError::Descriptor(_) => ErrorCode::Ring,
            SubmitError::AllocTable(e) => e.code(),
            SubmitError::StreamHeader(_) => ErrorCode::CmdDecode,
            SubmitError::Packet { kind, .. } => kind.code(),
            SubmitError::Limit { .. } => ErrorCode::ResourceLimit,
            SubmitError::Memory(_) => ErrorCode::Oob,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AllocTableError {
    #[error("bad header: {0}")]
    Header(&'static str),
    #[error("alloc_id 0 is reserved")]
    ZeroId,
    #[error("alloc_id {0} appears twice")]
    DuplicateId(u32),
    #[error("alloc_id {alloc_id}: backing [{gpa:#x}, +{size:#x}) is not guest RAM")]
    OutsideRam { alloc_id: u32, gpa: u64, size: u64 },
}

impl AllocTableError {
    pub fn code(&self) -> ErrorCode {
        match self {
            AllocTableError::OutsideRam { .. } => ErrorCode::Oob,
            _ => ErrorCode::AllocTable,
        }
    }
}

/// A packet that failed decoding or validation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PacketError {
    #[error("packet runs past the end of the stream")]
    Truncated,
    #[error("size_bytes {0} is below 8 or not a multiple of 4")]
    BadSize(u32),
    #[error("packet shorter than the fixed part of its opcode")]
    TooShort,
    #[error("payload shorter than its declared size")]
    PayloadTruncated,
    #[error("handle 0 is not a valid object")]
    ZeroHandle,
    #[error("handle {0} does not exist")]
    UnknownHandle(u32),
    #[error("handle {0} is already in use")]
    HandleInUse(u32),
    #[error("handle {handle} is not a {expected}")]
    WrongKind { handle: u32, expected: &'static str },
    #[error("CREATE on handle {0} changes immutable properties (destroy it first)")]
    RebindMismatch(u32),
    #[error("alloc_id {0} is not in this submission's allocation table")]
    MissingAllocId(u32),
    #[error(
        "backing of alloc_id {alloc_id}: offset {offset:#x} + size {size:#x} exceeds the allocation ({alloc_size:#x})"
    )]
    BackingOutOfBounds {
        alloc_id: u32,
        offset: u64,
        size: u64,
        alloc_size: u64,
    },
    #[error("range [{offset:#x}, +{size:#x}) outside the resource ({resource_size:#x})")]
    RangeOutOfBounds {
        offset: u64,
        size: u64,
        resource_size: u64,
    },
    #[error("writeback into READONLY alloc_id {0}")]
    ReadonlyWriteback(u32),
    #[error("resource {0} has no guest backing")]
    NotGuestBacked(u32),
    #[error("share_token 0 is not valid")]
    ZeroShareToken,
    #[error("share_token {0:#x} already maps to another resource")]
    ShareTokenCollision(u64),
    #[error("share_token {0:#x} is not exported")]
    UnknownShareToken(u64),
    #[error("invalid {what}: {value:#x}")]
    InvalidValue { what: &'static str, value: u64 },
    #[error("{what} exceeds the device limit")]
    Limit { what: &'static str },
    #[error("executor: {0}")]
    Executor(String),
}

impl PacketError {
    pub fn code(&self) -> ErrorCode {
        use PacketError::*;
        match self {
            Truncated | BadSize(_) | TooShort | PayloadTruncated => ErrorCode::CmdDecode,
            MissingAllocId(_) => ErrorCode::AllocTable,
            BackingOutOfBounds { .. } | RangeOutOfBounds { .. } => ErrorCode::Oob,
            ReadonlyWriteback(_) => ErrorCode::Readonly,
            Limit { .. } => ErrorCode::ResourceLimit,
            Executor(_) => ErrorCode::Backend,
            ZeroHandle
            | UnknownHandle(_)
            | HandleInUse(_)
            | WrongKind { .. }
            | RebindMismatch(_)
            | NotGuestBacked(_)
            | ZeroShareToken
            | ShareTokenCollision(_)
            | UnknownShareToken(_)
            | InvalidValue { .. } => ErrorCode::Validation,
        }
    }
}
