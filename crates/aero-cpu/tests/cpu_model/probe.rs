//! The bare-metal probe: a multiboot ("a.out kludge") image whose 32-bit code runs a
//! table of actions (CPUID, RDMSR, WRMSR, RDMSR over a range) and records every result,
//! catching #GP with an IDT handler that skips the faulting RDMSR/WRMSR. The records go
//! to a RAM buffer, then to the debug console (port 0xE9), then the probe writes to
//! QEMU's isa-debug-exit port (0xF4), which also stops Aero's test bus.

use iced_x86::code_asm::*;
use iced_x86::{Code, Instruction};

pub const IMAGE_BASE: u64 = 0x10_0000;
/// Guest RAM for QEMU (`-m`) and Aero.
pub const RAM_MIB: usize = 32;
pub const DEBUGCON_PORT: u16 = 0xE9;
pub const EXIT_PORT: u16 = 0xF4;

/// One step of the probe.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    Cpuid {
        leaf: u32,
        sub: u32,
    },
    Rdmsr(u32),
    Wrmsr(u32, u64),
    /// RDMSR of every index in `start..end`; records only #GP and non-zero values.
    RdmsrRange(u32, u32),
}

/// One result, as the probe recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    Cpuid {
        leaf: u32,
        sub: u32,
        regs: [u32; 4],
    },
    /// `None`: #GP.
    Rdmsr {
        msr: u32,
        value: Option<u64>,
    },
    /// `gp`: the write raised #GP.
    Wrmsr {
        msr: u32,
        value: u64,
        gp: bool,
    },
    /// An exception other than #GP from RDMSR/WRMSR: the probe stopped.
    Unexpected {
        vector: u32,
    },
}

// Offsets in the image.
const MB_HEADER: usize = 0x0;
const GDTR: usize = 0x40;
const IDTR: usize = 0x48;
const GDT: usize = 0x50;
const IDT: usize = 0x100;
const ACTIONS: usize = 0x1000;
const CODE: usize = 0x9000;
const IMAGE_LEN: usize = 0xA000;
const MAX_ACTIONS: usize = (CODE - ACTIONS) / 16 - 1;

/// Physical address of the record buffer (outside the image).
const OUT: u32 = 0x40_0000;
const STACK_TOP: u32 = 0x9_0000;
const SEL_CODE: u16 = 0x08;
const SEL_DATA: u16 = 0x10;
const MAGIC: &[u8; 4] = b"PRB1";
const RECORD_LEN: usize = 32;

const OP_END: u32 = 0;
const OP_CPUID: u32 = 1;
const OP_RDMSR: u32 = 2;
const OP_WRMSR: u32 = 3;
const OP_RANGE: u32 = 4;
const KIND_UNEXPECTED: u32 = 0xEE;

pub struct Image {
    pub bytes: Vec<u8>,
    pub entry: u32,
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn build(actions: &[Action]) -> Result<Image, String> {
    if actions.len() > MAX_ACTIONS {
        return Err(format!("{} actions, at most {MAX_ACTIONS}", actions.len()));
    }
    let mut b = vec![0u8; IMAGE_LEN];
    for (i, act) in actions.iter().enumerate() {
        let words = match *act {
            Action::Cpuid { leaf, sub } => [OP_CPUID, leaf, sub, 0],
            Action::Rdmsr(m) => [OP_RDMSR, m, 0, 0],
            Action::Wrmsr(m, v) => [OP_WRMSR, m, v as u32, (v >> 32) as u32],
            Action::RdmsrRange(s, e) => [OP_RANGE, s, e, 0],
        };
        for (k, w) in words.iter().enumerate() {
            put32(&mut b, ACTIONS + i * 16 + k * 4, *w);
        }
    }
    put32(&mut b, ACTIONS + actions.len() * 16, OP_END);

    // GDT: null, flat 32-bit code, flat data.
    let gdt: [u64; 3] = [0, 0x00CF_9B00_0000_FFFF, 0x00CF_9300_0000_FFFF];
    for (i, d) in gdt.iter().enumerate() {
        b[GDT + i * 8..GDT + i * 8 + 8].copy_from_slice(&d.to_le_bytes());
    }
    b[GDTR..GDTR + 2].copy_from_slice(&(gdt.len() as u16 * 8 - 1).to_le_bytes());
    put32(&mut b, GDTR + 2, (IMAGE_BASE as usize + GDT) as u32);
    b[IDTR..IDTR + 2].copy_from_slice(&(32u16 * 8 - 1).to_le_bytes());
    put32(&mut b, IDTR + 2, (IMAGE_BASE as usize + IDT) as u32);

    let ip = IMAGE_BASE + CODE as u64;
    // Two passes: the far jump that reloads CS needs the address of its target.
    let assembled = assemble(ip, 0)
        .and_then(|(_, _, reload)| assemble(ip, reload))
        .map_err(|e| format!("assembling the probe: {e}"))?;
    let (code, handlers, _) = assembled;
    if CODE + code.len() > IMAGE_LEN {
        return Err("probe code too large".into());
    }
    b[CODE..CODE + code.len()].copy_from_slice(&code);
    for (v, h) in handlers.iter().enumerate() {
        let h = *h as u32;
        let lo = (h & 0xFFFF) as u64 | ((SEL_CODE as u64) << 16);
        let hi = (h & 0xFFFF_0000) as u64 | 0x8E00; // present 32-bit interrupt gate
        b[IDT + v * 8..IDT + v * 8 + 8].copy_from_slice(&(lo | (hi << 32)).to_le_bytes());
    }

    // Multiboot header (flags bit 16: the load addresses below are valid).
    const MB_MAGIC: u32 = 0x1BAD_B002;
    const MB_FLAGS: u32 = 1 << 16;
    let load = IMAGE_BASE as u32;
    put32(&mut b, MB_HEADER, MB_MAGIC);
    put32(&mut b, MB_HEADER + 4, MB_FLAGS);
    put32(
        &mut b,
        MB_HEADER + 8,
        0u32.wrapping_sub(MB_MAGIC.wrapping_add(MB_FLAGS)),
    );
    put32(&mut b, MB_HEADER + 12, load);
    put32(&mut b, MB_HEADER + 16, load);
    put32(&mut b, MB_HEADER + 20, load + IMAGE_LEN as u32);
    put32(&mut b, MB_HEADER + 24, 0);
    put32(&mut b, MB_HEADER + 28, ip as u32);
    Ok(Image {
        bytes: b,
        entry: ip as u32,
    })
}

/// Stores one record at [edi]: kind, a (ecx), b (ebx), 0, eax, edx, 0, 0.
fn emit_msr(a: &mut CodeAssembler, kind: u32) -> Result<(), IcedError> {
    a.mov(dword_ptr(edi), kind)?;
    a.mov(dword_ptr(edi + 4), ecx)?;
    a.mov(dword_ptr(edi + 8), ebx)?;
    a.mov(dword_ptr(edi + 12), 0u32)?;
    a.mov(dword_ptr(edi + 16), eax)?;
    a.mov(dword_ptr(edi + 20), edx)?;
    a.mov(dword_ptr(edi + 24), 0u32)?;
    a.mov(dword_ptr(edi + 28), 0u32)?;
    a.add(edi, RECORD_LEN as i32)
}

/// The probe code, the address of each exception vector's handler and of the label
/// the far jump at the start goes to (`reload_ip` from the first pass).
fn assemble(ip: u64, reload_ip: u64) -> Result<(Vec<u8>, Vec<u64>, u64), IcedError> {
    let abs = |off: usize| IMAGE_BASE + off as u64;
    let mut a = CodeAssembler::new(32)?;
    let mut reload = a.create_label();
    let mut next = a.create_label();
    let mut done = a.create_label();
    let mut do_cpuid = a.create_label();
    let mut do_rdmsr = a.create_label();
    let mut do_wrmsr = a.create_label();
    let mut do_range = a.create_label();
    let mut range_loop = a.create_label();
    let mut range_emit = a.create_label();
    let mut range_skip = a.create_label();
    let mut range_done = a.create_label();
    let mut gp = a.create_label();
    let mut unexpected = a.create_label();
    let mut halt = a.create_label();
    let mut stubs: Vec<CodeLabel> = (0..32).map(|_| a.create_label()).collect();

    a.cli()?;
    a.cld()?;
    a.lgdt(ptr(abs(GDTR)))?;
    // The loader's CS selector means nothing in our GDT (IRET would reload it).
    a.add_instruction(Instruction::with_far_branch(
        Code::Jmp_ptr1632,
        SEL_CODE,
        reload_ip as u32,
    )?)?;
    a.set_label(&mut reload)?;
    a.mov(ax, SEL_DATA as u32)?;
    for s in [ds, es, fs, gs, ss] {
        a.mov(s, ax)?;
    }
    a.mov(esp, STACK_TOP)?;
    a.lidt(ptr(abs(IDTR)))?;
    a.mov(edi, OUT)?;
    a.mov(dword_ptr(edi), u32::from_le_bytes(*MAGIC))?;
    a.add(edi, 4)?;
    a.mov(esi, abs(ACTIONS) as u32)?;

    a.set_label(&mut next)?;
    a.mov(eax, dword_ptr(esi))?;
    a.cmp(eax, OP_CPUID)?;
    a.je(do_cpuid)?;
    a.cmp(eax, OP_RDMSR)?;
    a.je(do_rdmsr)?;
    a.cmp(eax, OP_WRMSR)?;
    a.je(do_wrmsr)?;
    a.cmp(eax, OP_RANGE)?;
    a.je(do_range)?;
    a.jmp(done)?;

    a.set_label(&mut do_cpuid)?;
    a.mov(eax, dword_ptr(esi + 4))?;
    a.mov(ecx, dword_ptr(esi + 8))?;
    a.cpuid()?;
    a.mov(dword_ptr(edi), OP_CPUID)?;
    a.mov(ebp, dword_ptr(esi + 4))?;
    a.mov(dword_ptr(edi + 4), ebp)?;
    a.mov(ebp, dword_ptr(esi + 8))?;
    a.mov(dword_ptr(edi + 8), ebp)?;
    a.mov(dword_ptr(edi + 12), 0u32)?;
    a.mov(dword_ptr(edi + 16), eax)?;
    a.mov(dword_ptr(edi + 20), ebx)?;
    a.mov(dword_ptr(edi + 24), ecx)?;
    a.mov(dword_ptr(edi + 28), edx)?;
    a.add(edi, RECORD_LEN as i32)?;
    a.add(esi, 16)?;
    a.jmp(next)?;

    // The #GP handler sets EBX to 1 and resumes after the 2-byte RDMSR/WRMSR.
    a.set_label(&mut do_rdmsr)?;
    a.mov(ecx, dword_ptr(esi + 4))?;
    a.xor(ebx, ebx)?;
    a.xor(eax, eax)?;
    a.xor(edx, edx)?;
    a.rdmsr()?;
    emit_msr(&mut a, OP_RDMSR)?;
    a.add(esi, 16)?;
    a.jmp(next)?;

    a.set_label(&mut do_wrmsr)?;
    a.mov(ecx, dword_ptr(esi + 4))?;
    a.mov(eax, dword_ptr(esi + 8))?;
    a.mov(edx, dword_ptr(esi + 12))?;
    a.xor(ebx, ebx)?;
    a.wrmsr()?;
    emit_msr(&mut a, OP_WRMSR)?;
    a.add(esi, 16)?;
    a.jmp(next)?;

    a.set_label(&mut do_range)?;
    a.mov(ecx, dword_ptr(esi + 4))?;
    a.set_label(&mut range_loop)?;
    a.cmp(ecx, dword_ptr(esi + 8))?;
    a.jae(range_done)?;
    a.xor(ebx, ebx)?;
    a.xor(eax, eax)?;
    a.xor(edx, edx)?;
    a.rdmsr()?;
    a.test(ebx, ebx)?;
    a.jnz(range_emit)?;
    a.mov(ebp, eax)?;
    a.or(ebp, edx)?;
    a.jz(range_skip)?;
    a.set_label(&mut range_emit)?;
    emit_msr(&mut a, OP_RDMSR)?;
    a.set_label(&mut range_skip)?;
    a.inc(ecx)?;
    a.jmp(range_loop)?;
    a.set_label(&mut range_done)?;
    a.add(esi, 16)?;
    a.jmp(next)?;

    // Everything recorded: send the buffer to the debug console, then exit.
    a.set_label(&mut done)?;
    a.mov(ecx, edi)?;
    a.sub(ecx, OUT as i32)?;
    a.mov(esi, OUT)?;
    a.mov(edx, DEBUGCON_PORT as u32)?;
    a.rep().outsb()?;
    a.mov(edx, EXIT_PORT as u32)?;
    a.xor(eax, eax)?;
    a.out(dx, eax)?;
    a.set_label(&mut halt)?;
    a.cli()?;
    a.hlt()?;
    a.jmp(halt)?;

    a.set_label(&mut gp)?;
    a.mov(ebx, 1u32)?;
    a.add(dword_ptr(esp + 4), 2)?;
    a.add(esp, 4)?;
    a.iretd()?;

    // Any other exception: record its vector and stop.
    for (v, stub) in stubs.iter_mut().enumerate() {
        a.set_label(stub)?;
        a.push(v as i32)?;
        a.jmp(unexpected)?;
    }
    a.set_label(&mut unexpected)?;
    a.pop(eax)?;
    a.mov(dword_ptr(edi), KIND_UNEXPECTED)?;
    a.mov(dword_ptr(edi + 4), eax)?;
    for k in 2..8 {
        a.mov(dword_ptr(edi + 4 * k), 0u32)?;
    }
    a.add(edi, RECORD_LEN as i32)?;
    a.jmp(done)?;

    let r = a.assemble_options(
        ip,
        iced_x86::BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
    )?;
    let mut handlers = Vec::with_capacity(32);
    for (v, stub) in stubs.iter().enumerate() {
        handlers.push(if v == 13 {
            r.label_ip(&gp)?
        } else {
            r.label_ip(stub)?
        });
    }
    let reload = r.label_ip(&reload)?;
    Ok((r.inner.code_buffer, handlers, reload))
}

/// Parses the debug-console output. Errors name what is wrong with it.
pub fn parse(out: &[u8]) -> Result<Vec<Record>, String> {
    let start = out
        .windows(4)
        .position(|w| w == MAGIC)
        .ok_or("no probe output (magic missing)")?;
    let body = &out[start + 4..];
    if !body.len().is_multiple_of(RECORD_LEN) {
        return Err(format!(
            "output truncated: {} bytes after the magic",
            body.len()
        ));
    }
    let mut records = Vec::new();
    for rec in body.chunks(RECORD_LEN) {
        let w = |k: usize| u32::from_le_bytes(rec[4 * k..4 * k + 4].try_into().unwrap());
        let value = (w(5) as u64) << 32 | w(4) as u64;
        records.push(match w(0) {
            OP_CPUID => Record::Cpuid {
                leaf: w(1),
                sub: w(2),
                regs: [w(4), w(5), w(6), w(7)],
            },
            OP_RDMSR => Record::Rdmsr {
                msr: w(1),
                value: (w(2) == 0).then_some(value),
            },
            OP_WRMSR => Record::Wrmsr {
                msr: w(1),
                value,
                gp: w(2) != 0,
            },
            KIND_UNEXPECTED => Record::Unexpected { vector: w(1) },
            k => return Err(format!("unknown record kind {k:#x}")),
        });
    }
    Ok(records)
}
