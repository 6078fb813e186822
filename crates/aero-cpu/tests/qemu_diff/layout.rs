//! Physical memory layout shared by the test image builder, the QEMU run and the Aero run.
//!
//! The image is a flat multiboot ("a.out kludge") kernel loaded at `IMAGE_BASE`. Its 32-bit
//! driver copies one chunk of cases at a time to the chunk's run address, switches to the
//! chunk's mode, runs it and switches back. Real-mode chunks run at segment `RM_SEG`;
//! protected- and long-mode chunks at `PM_RUN_BASE` under identity paging of the low 16 MiB.

pub const IMAGE_BASE: u64 = 0x10_0000;
/// The image must end below the case stack and run area (see `PM_CASE_SP`).
pub const IMAGE_MAX_LEN: usize = 0xA0_0000;
/// Guest RAM for both QEMU (`-m 64`) and Aero.
pub const RAM_MIB: usize = 64;

// Offsets inside the image.
pub const MB_HEADER: usize = 0x0;
pub const VAR_START_CHUNK: usize = 0x20;
pub const VAR_START_CASE: usize = 0x24;
pub const VAR_NCHUNKS: usize = 0x28;
pub const VAR_CUR: usize = 0x2C;
pub const VAR_SAVED_ESP: usize = 0x30;
pub const VAR_RET_LM: usize = 0x38;
pub const VAR_FARPTR: usize = 0x40;
pub const GDTR: usize = 0x48;
pub const GDT: usize = 0x50;
pub const CHUNK_TABLE: usize = 0x100;
pub const CHUNK_TABLE_END: usize = 0x4000;
pub const CHUNK_ENTRY_LEN: usize = 16;
pub const PD32: usize = 0x4000;
pub const PT32: usize = 0x5000; // four page tables: 16 MiB
pub const PML4: usize = 0x9000;
pub const PDPT: usize = 0xA000;
pub const PD64: usize = 0xB000;
pub const DRIVER: usize = 0xC000;
pub const DRIVER_MAX: usize = 0x1000;
pub const CHUNKS: usize = 0xD000;

// GDT selectors (built by the image, used by driver and chunks).
pub const SEL_CODE32: u16 = 0x08;
pub const SEL_DATA32: u16 = 0x10;
pub const SEL_CODE16: u16 = 0x18; // base RM_BASE, 64 KiB: the step between PM and RM
pub const SEL_DATA16: u16 = 0x20; // base 0, 64 KiB: real-mode compatible hidden limits
pub const SEL_CODE64: u16 = 0x28;
/// Stack cases (`stackgen.rs`): a 16-bit (B=0) and a 32-bit (B=1) stack segment, both
/// based so that offset 0x10000 is `PM_CASE_SP` (4 GiB limit), and a 16-bit code segment
/// each 16-bit-code case points at its own code before jumping there.
pub const SEL_STACK16: u16 = 0x30;
pub const SEL_STACK32: u16 = 0x38;
pub const SEL_CODE16_CASE: u16 = 0x40;
pub const STACK_SEG_BASE: u64 = PM_CASE_SP - 0x1_0000;

pub const DRIVER_SP: u64 = 0x8_0000;

pub const RM_SEG: u16 = 0x1000;
pub const RM_BASE: u64 = 0x1_0000;
pub const RM_MAX_CHUNK: usize = 0xF000;
pub const RM_STACK_SEG: u16 = 0x2000;
pub const RM_HARNESS_SP: u64 = 0xFFF0;
pub const RM_CASE_SP: u64 = 0x8000;

pub const PM_RUN_BASE: u64 = 0xC0_0000;
pub const PM_MAX_CHUNK: usize = 0x20_0000;
pub const PM_CASE_SP: u64 = 0xBF_0000;

// Layout of one chunk (offsets from the chunk's run base). Data first, code after.
pub const C_OUT: u64 = 0x000; // record header + registers (OUT_LEN bytes)
pub const C_OUT_FX: u64 = 0x100; // FXSAVE of the case's result (512)
pub const C_HARNESS_SP: u64 = 0x300;
pub const C_AFTER_PTR: u64 = 0x308;
pub const C_START: u64 = 0x310;
pub const C_RET_FAR: u64 = 0x318;
pub const C_IDTR: u64 = 0x320;
/// The harness's SS selector (stack cases reload it after the instruction).
pub const C_HARNESS_SS: u64 = 0x330;
pub const C_SCRATCH: u64 = 0x340;
pub const C_IDT: u64 = 0x400;
pub const C_DEFAULT_FX: u64 = 0x600;
pub const C_INPUTS: u64 = 0x800;

/// Per-case input block: rflags (8), 16 GPRs (128), pad (8), scratch memory image, the
/// stack window's initial contents, then SS (8) and ESP (8) of a stack case.
pub const IN_FLAGS: u64 = 0;
pub const IN_GPR: u64 = 8;
pub const IN_MEM: u64 = 144;
pub const IN_STACK: u64 = IN_MEM + SCRATCH_LEN as u64;
pub const IN_SS: u64 = IN_STACK + STACK_LEN as u64;
pub const IN_ESP: u64 = IN_SS + 8;
pub const IN_LEN: u64 = IN_ESP + 8;

/// Memory the cases may touch; dumped after every case.
pub const SCRATCH_LEN: usize = 128;
/// Stack bytes dumped: [case SP - STACK_BELOW, case SP + STACK_ABOVE).
pub const STACK_BELOW: u64 = 32;
pub const STACK_ABOVE: u64 = 16;
pub const STACK_LEN: usize = (STACK_BELOW + STACK_ABOVE) as usize;

// Record header layout (at C_OUT, emitted first).
pub const OUT_MAGIC: u64 = 0;
pub const OUT_ID: u64 = 4;
pub const OUT_EXC_VEC: u64 = 8;
pub const OUT_HAS_FX: u64 = 12;
pub const OUT_EXC_ERR: u64 = 16;
pub const OUT_EXC_IP: u64 = 24;
pub const OUT_GPR: u64 = 32;
pub const OUT_FLAGS: u64 = 160;
pub const OUT_SEGS: u64 = 168;
pub const OUT_LEN: usize = 184;
pub const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"AREC");
pub const END_MARKER: &[u8; 4] = b"AEND";

/// Debug console port (QEMU `-debugcon`, Aero's test bus) and QEMU's isa-debug-exit.
pub const DEBUGCON_PORT: u16 = 0xE9;
pub const EXIT_PORT: u16 = 0xF4;

/// Base of a chunk as seen by the chunk's code (RM: offset inside `RM_SEG`).
pub fn chunk_code_base(mode: super::case::Mode) -> u64 {
    match mode {
        super::case::Mode::Real => 0,
        _ => PM_RUN_BASE,
    }
}
