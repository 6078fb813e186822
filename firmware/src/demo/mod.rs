//! The built-in demo guest: a tiny bootable disk that `aero run` and `aero headless`
//! boot when the user gives no disk.
//!
//! On Aero it shows its picture through AeroGPU (`aerogpu`: PCI scan, ring, fence
//! interrupts, scanout 0 on a framebuffer in RAM). Everything else is standard PC
//! interfaces, so the same image runs on our BIOS, on SeaBIOS and on QEMU (the boot
//! tests use QEMU, which has no AeroGPU, as an oracle): INT 13h to load itself, the
//! 16550 at 3F8h for serial output, VBE (INT 10h 4F00h/4F01h/4F02h) with a linear
//! framebuffer or VGA mode 13h when AeroGPU is absent, INT 16h for keys and the BDA
//! tick count for the animation. Idle time is spent in HLT.
//!
//! Disk layout: LBA 0 = boot sector (`boot`), LBA 1.. = the payload (`payload`, drawing
//! in `draw`), loaded at [`LOAD_SEGMENT`]:0000; the rest of the disk is zeros.

mod aerogpu;
mod boot;
mod draw;
mod mesh;
mod payload;

#[cfg(test)]
mod tests;

/// Segment the boot sector loads the payload to (linear 8000h, below the 64 KiB DMA
/// boundary for any payload up to [`MAX_PAYLOAD_SECTORS`]).
pub const LOAD_SEGMENT: u16 = 0x0800;
/// Scratch segment for the VBE information blocks.
const BUF_SEGMENT: u16 = 0x1000;
/// The payload must fit in one CHS track (sectors 2..63) and below 1000h:0000.
pub const MAX_PAYLOAD_SECTORS: usize = 60;
/// Disk size: 2 cylinders × 16 heads × 63 sectors, a geometry every BIOS agrees on.
pub const DEMO_DISK_SECTORS: usize = 2 * 16 * 63;
pub const SECTOR_SIZE: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("assembler: {0}")]
    Asm(#[from] iced_x86::IcedError),
    #[error(transparent)]
    Assembly(#[from] crate::asm16::AsmError),
    #[error("code of {0} bytes does not fit its space")]
    TooLarge(usize),
    #[error("the 8x16 font has no ASCII glyphs")]
    Font,
}

/// The demo program as shipped in `assets/demo/aero-demo.bin` (boot sector + payload;
/// rebuilt from this source by `aero demo build`; a unit test keeps the two equal).
pub const SHIPPED_DEMO_PROGRAM: &[u8] = include_bytes!("../../../assets/demo/aero-demo.bin");

/// Assembles the demo program: the boot sector followed by the payload sectors.
pub fn build_demo_program() -> Result<Vec<u8>, DemoError> {
    let mut payload = crate::asm16::assemble(0, payload::emit)?.bytes;
    let sectors = payload.len().div_ceil(SECTOR_SIZE);
    if sectors > MAX_PAYLOAD_SECTORS {
        return Err(DemoError::TooLarge(payload.len()));
    }
    payload.resize(sectors * SECTOR_SIZE, 0);
    let mut program = boot::boot_sector(sectors as u8)?;
    program.extend_from_slice(&payload);
    Ok(program)
}

/// A raw disk of [`DEMO_DISK_SECTORS`] sectors holding `program` at LBA 0 (the rest zeros).
pub fn demo_disk_from(program: &[u8]) -> Vec<u8> {
    let mut disk = program.to_vec();
    disk.resize(DEMO_DISK_SECTORS * SECTOR_SIZE, 0);
    disk
}

/// Builds the demo disk image from source (raw, [`DEMO_DISK_SECTORS`] sectors).
pub fn build_demo_disk() -> Result<Vec<u8>, DemoError> {
    Ok(demo_disk_from(&build_demo_program()?))
}

/// The disk `aero run`/`aero headless` boot without a disk: the shipped program.
pub fn demo_disk_image() -> Vec<u8> {
    demo_disk_from(SHIPPED_DEMO_PROGRAM)
}
