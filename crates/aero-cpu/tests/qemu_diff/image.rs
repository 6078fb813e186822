//! The bootable test image: multiboot header, GDT, page tables, the 32-bit driver and the
//! chunks. QEMU loads it with `-kernel`; the Aero run copies it to the same address and
//! starts in the state a multiboot loader leaves.

use iced_x86::code_asm::*;
use iced_x86::{BlockEncoderOptions, Code, Instruction};

use super::case::{Case, Mode};
use super::chunk::{self, Chunk};
use super::layout::*;

pub struct Image {
    pub bytes: Vec<u8>,
    pub entry: u32,
    /// Chunks in run order.
    pub chunks: Vec<Chunk>,
}

impl Image {
    /// A copy whose driver starts at `chunk`, case index `case` (used to resume Aero
    /// after a case crashed it).
    pub fn with_start(&self, chunk: u32, case: u32) -> Vec<u8> {
        let mut b = self.bytes.clone();
        b[VAR_START_CHUNK..VAR_START_CHUNK + 4].copy_from_slice(&chunk.to_le_bytes());
        b[VAR_START_CASE..VAR_START_CASE + 4].copy_from_slice(&case.to_le_bytes());
        b
    }
}

const RM_CASES_PER_CHUNK: usize = 40;
const PM_CASES_PER_CHUNK: usize = 64;

pub fn build(cases: &[Case]) -> Result<Image, String> {
    // Split per mode (keeping id order), then interleave the modes' chunks so the run
    // switches modes often.
    let mut per_mode: Vec<Vec<Chunk>> = Vec::new();
    for mode in Mode::ALL {
        let of_mode: Vec<&Case> = cases.iter().filter(|c| c.mode == mode).collect();
        let n = if mode == Mode::Real {
            RM_CASES_PER_CHUNK
        } else {
            PM_CASES_PER_CHUNK
        };
        let mut chunks = Vec::new();
        for group in of_mode.chunks(n) {
            chunks.push(
                chunk::build(mode, group)
                    .map_err(|e| format!("assembling a {} chunk: {e}", mode.name()))?,
            );
        }
        per_mode.push(chunks);
    }
    let mut chunks = Vec::new();
    let mut iters: Vec<_> = per_mode.into_iter().map(|v| v.into_iter()).collect();
    loop {
        let mut any = false;
        for it in iters.iter_mut() {
            if let Some(c) = it.next() {
                chunks.push(c);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    if CHUNK_TABLE + chunks.len() * CHUNK_ENTRY_LEN > CHUNK_TABLE_END {
        return Err(format!("too many chunks ({}) for one image", chunks.len()));
    }

    let mut bytes = vec![0u8; CHUNKS];
    // Chunk blobs and the table.
    for (i, c) in chunks.iter().enumerate() {
        while !bytes.len().is_multiple_of(16) {
            bytes.push(0);
        }
        let src = IMAGE_BASE as usize + bytes.len();
        let size = (c.bytes.len() + 3) & !3;
        bytes.extend_from_slice(&c.bytes);
        bytes.resize(bytes.len() + (size - c.bytes.len()), 0);
        let e = CHUNK_TABLE + i * CHUNK_ENTRY_LEN;
        put32(&mut bytes, e, c.mode.code());
        put32(&mut bytes, e + 4, src as u32);
        put32(&mut bytes, e + 8, size as u32);
        put32(&mut bytes, e + 12, c.entry);
    }
    if bytes.len() > IMAGE_MAX_LEN {
        return Err(format!("image too large: {} bytes", bytes.len()));
    }
    put32(&mut bytes, VAR_NCHUNKS, chunks.len() as u32);
    write_gdt(&mut bytes);
    write_page_tables(&mut bytes);
    let driver = assemble_driver().map_err(|e| format!("assembling the driver: {e}"))?;
    if driver.len() > DRIVER_MAX {
        return Err("driver too large".into());
    }
    bytes[DRIVER..DRIVER + driver.len()].copy_from_slice(&driver);
    let entry = (IMAGE_BASE as usize + DRIVER) as u32;
    write_multiboot_header(&mut bytes, entry);
    Ok(Image {
        bytes,
        entry,
        chunks,
    })
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn write_multiboot_header(b: &mut [u8], entry: u32) {
    const MAGIC: u32 = 0x1BAD_B002;
    const FLAGS: u32 = 1 << 16; // addresses below are valid (a.out kludge)
    let load = IMAGE_BASE as u32;
    put32(b, MB_HEADER, MAGIC);
    put32(b, MB_HEADER + 4, FLAGS);
    put32(
        b,
        MB_HEADER + 8,
        0u32.wrapping_sub(MAGIC.wrapping_add(FLAGS)),
    );
    put32(b, MB_HEADER + 12, load); // header_addr
    put32(b, MB_HEADER + 16, load); // load_addr
    put32(b, MB_HEADER + 20, load + b.len() as u32); // load_end_addr
    put32(b, MB_HEADER + 24, 0); // bss_end_addr: none
    put32(b, MB_HEADER + 28, entry);
}

fn write_gdt(b: &mut [u8]) {
    // Accessed bits preset (see exclusions: QEMU does not set it when loading CS).
    let entries: [u64; 9] = [
        0,
        0x00CF_9B00_0000_FFFF, // 0x08 code32 flat
        0x00CF_9300_0000_FFFF, // 0x10 data32 flat
        0x0000_9B01_0000_FFFF, // 0x18 code16, base RM_BASE (0x10000), limit 64 KiB
        0x0000_9300_0000_FFFF, // 0x20 data16, base 0, limit 64 KiB
        0x00AF_9B00_0000_FFFF, // 0x28 code64
        0x008F_93BE_0000_FFFF, // 0x30 stack16: base STACK_SEG_BASE, 4 GiB, B=0
        0x00CF_93BE_0000_FFFF, // 0x38 stack32: base STACK_SEG_BASE, 4 GiB, B=1
        0,                     // 0x40 code16 of the running stack case (written by it)
    ];
    debug_assert_eq!(RM_BASE, 0x1_0000);
    debug_assert_eq!(STACK_SEG_BASE, 0xBE_0000);
    debug_assert_eq!(SEL_CODE16_CASE as usize, 8 * (entries.len() - 1));
    for (i, e) in entries.iter().enumerate() {
        put64(b, GDT + i * 8, *e);
    }
    b[GDTR..GDTR + 2].copy_from_slice(&((entries.len() * 8 - 1) as u16).to_le_bytes());
    put32(b, GDTR + 2, (IMAGE_BASE as usize + GDT) as u32);
}

/// Identity map of the low 16 MiB: 4 KiB pages for 32-bit paging, 2 MiB pages for long mode.
fn write_page_tables(b: &mut [u8]) {
    let abs = |off: usize| IMAGE_BASE + off as u64;
    for t in 0..4 {
        put32(b, PD32 + t * 4, (abs(PT32 + t * 0x1000) | 3) as u32);
        for j in 0..1024 {
            let page = ((t * 1024 + j) as u64) << 12;
            put32(b, PT32 + t * 0x1000 + j * 4, (page | 3) as u32);
        }
    }
    // A 16-bit stack case's SP wraps from 0 to FFFF inside its segment: offsets 0..0xFFF
    // (linear STACK_SEG_BASE) alias the page at PM_CASE_SP, so both sides of the wrap
    // land in the dumped stack window.
    let alias = (STACK_SEG_BASE >> 12) as usize;
    put32(b, PT32 + alias * 4, (PM_CASE_SP | 3) as u32);
    put64(b, PML4, abs(PDPT) | 3);
    put64(b, PDPT, abs(PD64) | 3);
    for i in 0..8 {
        put64(b, PD64 + i * 8, ((i as u64) << 21) | 0x83);
    }
}

fn assemble_driver() -> Result<Vec<u8>, IcedError> {
    let first = driver_pass(None)?;
    let second = driver_pass(Some(first.1))?;
    Ok(second.0)
}

/// (ret_rm, ret_lm, reload) label addresses from the first pass.
type DriverAddrs = (u64, u64, u64);

fn driver_pass(addrs: Option<DriverAddrs>) -> Result<(Vec<u8>, DriverAddrs), IcedError> {
    let v = |off: usize| IMAGE_BASE + off as u64;
    let (ret_rm_ip, ret_lm_ip, reload_ip) = addrs.unwrap_or((0, 0, 0));
    let mut a = CodeAssembler::new(32)?;
    let mut reload = a.create_label();
    let mut next = a.create_label();
    let mut done = a.create_label();
    let mut not_first = a.create_label();
    let mut not_rm = a.create_label();
    let mut not_pm = a.create_label();
    let mut ret_rm = a.create_label();
    let mut ret_lm = a.create_label();
    let mut advance = a.create_label();

    a.cli()?;
    a.cld()?;
    a.lgdt(ptr(v(GDTR)))?;
    a.add_instruction(Instruction::with_far_branch(
        Code::Jmp_ptr1632,
        SEL_CODE32,
        reload_ip as u32,
    )?)?;
    a.set_label(&mut reload)?;
    reload_segments(&mut a)?;
    a.mov(esp, DRIVER_SP as u32)?;
    // A null LDT: TI=1 selectors fault the same way everywhere instead of reading whatever
    // the reset-time LDTR cache points at.
    a.xor(eax, eax)?;
    a.lldt(ax)?;
    // x87/SSE usable everywhere: CR0.MP|NE, EM|TS clear; CR4.OSFXSR|OSXMMEXCPT.
    a.mov(eax, cr0)?;
    a.and(eax, !0xCu32 as i32)?;
    a.or(eax, 0x22)?;
    a.mov(cr0, eax)?;
    a.mov(eax, cr4)?;
    a.or(eax, 0x600)?;
    a.mov(cr4, eax)?;
    a.fninit()?;
    a.mov(eax, dword_ptr(v(VAR_START_CHUNK)))?;
    a.mov(dword_ptr(v(VAR_CUR)), eax)?;

    a.set_label(&mut next)?;
    a.mov(eax, dword_ptr(v(VAR_CUR)))?;
    a.cmp(eax, dword_ptr(v(VAR_NCHUNKS)))?;
    a.jae(done)?;
    a.xor(ebx, ebx)?;
    a.cmp(eax, dword_ptr(v(VAR_START_CHUNK)))?;
    a.jne(not_first)?;
    a.mov(ebx, dword_ptr(v(VAR_START_CASE)))?;
    a.set_label(&mut not_first)?;
    a.shl(eax, 4)?;
    a.lea(ebp, ptr(eax + v(CHUNK_TABLE) as i32))?;
    a.mov(esi, dword_ptr(ebp + 4))?;
    a.mov(ecx, dword_ptr(ebp + 8))?;
    a.shr(ecx, 2)?;
    a.mov(eax, dword_ptr(ebp))?;
    a.cmp(eax, Mode::Real.code())?;
    a.jne(not_rm)?;

    // Real mode: copy to RM_BASE, enter through the 16-bit code segment.
    a.mov(edi, RM_BASE as u32)?;
    a.rep().movsd()?;
    a.mov(dword_ptr(RM_BASE + C_RET_FAR), ret_rm_ip as u32)?;
    a.mov(word_ptr(RM_BASE + C_RET_FAR + 4), SEL_CODE32 as u32)?;
    a.mov(dword_ptr(v(VAR_SAVED_ESP)), esp)?;
    a.mov(eax, dword_ptr(ebp + 12))?;
    a.mov(dword_ptr(v(VAR_FARPTR)), eax)?;
    a.mov(word_ptr(v(VAR_FARPTR) + 4), SEL_CODE16 as u32)?;
    a.jmp(fword_ptr(v(VAR_FARPTR)))?;
    a.set_label(&mut ret_rm)?;
    reload_segments(&mut a)?;
    a.mov(esp, dword_ptr(v(VAR_SAVED_ESP)))?;
    a.jmp(advance)?;

    a.set_label(&mut not_rm)?;
    a.mov(edi, PM_RUN_BASE as u32)?;
    a.rep().movsd()?;
    a.cmp(eax, Mode::Prot32.code())?;
    a.jne(not_pm)?;
    // 32-bit protected mode with 4 KiB paging.
    a.mov(eax, v(PD32) as u32)?;
    a.mov(cr3, eax)?;
    a.mov(eax, cr0)?;
    a.or(eax, 0x8000_0000u32 as i32)?;
    a.mov(cr0, eax)?;
    a.mov(eax, dword_ptr(ebp + 12))?;
    a.call(eax)?;
    a.mov(eax, cr0)?;
    a.and(eax, 0x7FFF_FFFF)?;
    a.mov(cr0, eax)?;
    reload_segments(&mut a)?;
    a.jmp(advance)?;

    // Long mode: PAE, EFER.LME, paging, far jump to the 64-bit code segment.
    a.set_label(&mut not_pm)?;
    a.mov(eax, cr4)?;
    a.or(eax, 0x20)?;
    a.mov(cr4, eax)?;
    a.mov(eax, v(PML4) as u32)?;
    a.mov(cr3, eax)?;
    a.mov(ecx, 0xC000_0080u32)?;
    a.rdmsr()?;
    a.or(eax, 0x100)?;
    a.wrmsr()?;
    a.mov(eax, cr0)?;
    a.or(eax, 0x8000_0000u32 as i32)?;
    a.mov(cr0, eax)?;
    a.mov(dword_ptr(v(VAR_SAVED_ESP)), esp)?;
    a.mov(dword_ptr(v(VAR_RET_LM)), ret_lm_ip as u32)?;
    a.mov(dword_ptr(v(VAR_RET_LM) + 4), 0u32)?;
    a.mov(eax, dword_ptr(ebp + 12))?;
    a.mov(dword_ptr(v(VAR_FARPTR)), eax)?;
    a.mov(word_ptr(v(VAR_FARPTR) + 4), SEL_CODE64 as u32)?;
    a.jmp(fword_ptr(v(VAR_FARPTR)))?;
    a.set_label(&mut ret_lm)?;
    // Back in compatibility mode: paging off (leaves long mode), then LME and PAE off.
    a.mov(eax, cr0)?;
    a.and(eax, 0x7FFF_FFFF)?;
    a.mov(cr0, eax)?;
    a.mov(ecx, 0xC000_0080u32)?;
    a.rdmsr()?;
    a.and(eax, !0x100i32)?;
    a.wrmsr()?;
    a.mov(eax, cr4)?;
    a.and(eax, !0x20i32)?;
    a.mov(cr4, eax)?;
    reload_segments(&mut a)?;
    a.mov(esp, dword_ptr(v(VAR_SAVED_ESP)))?;

    a.set_label(&mut advance)?;
    a.cld()?;
    a.inc(dword_ptr(v(VAR_CUR)))?;
    a.jmp(next)?;

    a.set_label(&mut done)?;
    a.mov(edx, DEBUGCON_PORT as u32)?;
    for &byte in END_MARKER {
        a.mov(al, byte as u32)?;
        a.out(dx, al)?;
    }
    // QEMU's isa-debug-exit ends the run; Aero's test bus stops on the same port.
    a.mov(edx, EXIT_PORT as u32)?;
    a.xor(eax, eax)?;
    a.out(dx, eax)?;
    let mut halt = a.create_label();
    a.set_label(&mut halt)?;
    a.cli()?;
    a.hlt()?;
    a.jmp(halt)?;

    let ip = IMAGE_BASE + DRIVER as u64;
    let r = a.assemble_options(ip, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)?;
    let addrs = (
        r.label_ip(&ret_rm)?,
        r.label_ip(&ret_lm)?,
        r.label_ip(&reload)?,
    );
    Ok((r.inner.code_buffer, addrs))
}

fn reload_segments(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.mov(ax, SEL_DATA32 as u32)?;
    for s in [ds, es, fs, gs, ss] {
        a.mov(s, ax)?;
    }
    Ok(())
}
