//! Stack cases: every push/pop/call/ret/enter/leave/iret/int form with a stack whose
//! address size differs from the code's: a 16-bit stack (SS.B=0) under 32-bit code and a
//! 32-bit stack (SS.B=1) under 16-bit code (CS.D=0), with SP near the 64 KiB wrap and
//! ESP's upper half non-zero. The main generator never changes SS; these cases bring
//! their own SS:ESP and stack contents (`case::StackCase`) and run in Prot32 chunks.
//!
//! Stack addresses: both stack segments are based at `STACK_SEG_BASE`, so offset 0x10000
//! is `PM_CASE_SP`, the anchor of the dumped window (32 bytes below, 16 above). For the
//! 16-bit stack, offsets 0..0xFFF alias the page at `PM_CASE_SP` (see `image.rs`), so
//! offsets FFE0..FFFF and 0..F are both in the window, as if the wrap were contiguous.

use iced_x86::{Decoder, DecoderOptions, FastFormatter};

use super::case::{Case, Link, LinkValue, Mode, StackCase, Undefined};
use super::layout::{
    self, SCRATCH_LEN, SEL_DATA16, SEL_DATA32, SEL_STACK16, SEL_STACK32, STACK_BELOW, STACK_LEN,
};
use super::rng::Rng;

/// Window index of stack offset `off` (the offset already wrapped to the stack size).
pub fn window_index(off: u64) -> Option<usize> {
    // 16-bit stacks: offsets 0..F sit right above the anchor (aliased page).
    let rel = if off < 0x10 { off + 0x1_0000 } else { off };
    let i = rel.checked_sub(0x1_0000 - STACK_BELOW)?;
    (i < STACK_LEN as u64).then_some(i as usize)
}

const HAS_ERROR_CODE: [u8; 8] = [8, 10, 11, 12, 13, 14, 17, 21];

/// The forms generated (names for the coverage report).
const FORMS: &[&str] = &[
    "push r",
    "pop r",
    "push imm8",
    "push imm",
    "push m",
    "pop m",
    "push sreg",
    "pop sreg",
    "pushf",
    "popf",
    "pusha",
    "popa",
    "enter",
    "leave",
    "call rel",
    "call r",
    "call m",
    "call far",
    "call far m",
    "ret",
    "ret imm",
    "retf",
    "retf imm",
    "iret",
    "int n",
    "int3",
    "into",
];

pub struct StackGen {
    rng: Rng,
    formatter: FastFormatter,
}

struct Builder {
    case: Case,
    st: StackCase,
    /// Stack address size 2 or 4 (SS.B) and code size 2 or 4 (CS.D).
    b32: bool,
    o32: bool,
}

impl Builder {
    fn sp(&self) -> u64 {
        if self.b32 {
            self.st.esp & 0xFFFF_FFFF
        } else {
            self.st.esp & 0xFFFF
        }
    }
    /// Window index of the stack slot `k` bytes above the current SP.
    fn slot(&self, k: u64) -> Option<usize> {
        let mask = if self.b32 { 0xFFFF_FFFF } else { 0xFFFF };
        window_index((self.sp() + k) & mask)
    }
    fn put(&mut self, k: u64, size: u8, v: u64) {
        if let Some(i) = self.slot(k) {
            let n = (size as usize).min(STACK_LEN - i);
            self.st.window[i..i + n].copy_from_slice(&v.to_le_bytes()[..n]);
        }
    }
    fn link(&mut self, k: u64, size: u8, value: LinkValue) {
        if let Some(at) = self.slot(k)
            && at + size as usize <= STACK_LEN
        {
            self.st.links.push(Link::Window { at, size, value });
        }
    }
}

impl StackGen {
    pub fn new(seed: u64) -> Self {
        StackGen {
            rng: Rng::new(seed ^ 0x57AC_57AC_57AC_57AC),
            formatter: FastFormatter::new(),
        }
    }

    pub fn forms() -> usize {
        FORMS.len()
    }

    /// Stack case `id`: alternately 32-bit code on a 16-bit stack and 16-bit code on a
    /// 32-bit stack.
    pub fn case(&mut self, id: u32) -> Case {
        loop {
            if let Some(mut c) = self.try_case(id % 2 == 1) {
                c.id = id;
                return c;
            }
        }
    }

    fn try_case(&mut self, code16: bool) -> Option<Case> {
        let r = &mut self.rng;
        let mut gpr = [0u64; 16];
        for g in gpr.iter_mut().take(8) {
            *g = r.edgy(32);
        }
        let mut rflags = 0x2;
        for bit in [0u64, 2, 4, 6, 7, 10, 11] {
            if r.chance(50) {
                rflags |= 1 << bit;
            }
        }
        let mut mem = [0u8; SCRATCH_LEN];
        for b in mem.iter_mut() {
            *b = r.next_u64() as u8;
        }
        let mut window = [0u8; STACK_LEN];
        for b in window.iter_mut() {
            *b = r.next_u64() as u8;
        }
        let b32 = code16;
        // SP near the wrap; the upper half of ESP is non-zero (16-bit stack) or the
        // 32-bit ESP sits just around 0x10000.
        let sp = *r.pick(&[0xFFFCu64, 0x0002, 0x0000, 0xFFFE, 0xFFF8, 0xFFF0, 0x0004]);
        let esp = if b32 {
            (sp as u16 as i16 as i64 + 0x1_0000) as u64
        } else {
            ((r.below(0xFFFF) + 1) << 16) | sp
        };
        let form = r.below(FORMS.len() as u64) as usize;
        let o32 = if code16 { r.chance(40) } else { r.chance(75) };
        let mut b = Builder {
            case: Case {
                id: 0,
                mode: Mode::Prot32,
                category: if code16 {
                    "stack32/code16"
                } else {
                    "stack16/code32"
                },
                insn: iced_x86::Instruction::default(),
                text: String::new(),
                gpr,
                rflags,
                mem,
                fx: None,
                undefined: Undefined::default(),
                raw: None,
                stack: None,
            },
            st: StackCase {
                code16,
                ss: if b32 { SEL_STACK32 } else { SEL_STACK16 },
                esp,
                window,
                links: Vec::new(),
            },
            b32,
            o32,
        };
        let raw = self.form(&mut b, form, code16)?;
        let bits = if code16 { 16 } else { 32 };
        let mut dec = Decoder::new(bits, &raw, DecoderOptions::NONE);
        b.case.insn = dec.decode();
        if b.case.insn.is_invalid() || b.case.insn.len() != raw.len() {
            return None;
        }
        self.formatter.format(&b.case.insn, &mut b.case.text);
        b.case.text.push_str(if code16 {
            " [cs.d=0 ss.b=1]"
        } else {
            " [cs.d=1 ss.b=0]"
        });
        b.case.raw = Some(raw);
        b.case.stack = Some(Box::new(b.st));
        Some(b.case)
    }

    /// Encodes form `form`; sets up the stack contents it reads.
    fn form(&mut self, b: &mut Builder, form: usize, code16: bool) -> Option<Vec<u8>> {
        let r = &mut self.rng;
        let o32 = b.o32;
        let size: u8 = if o32 { 4 } else { 2 };
        let mut raw = Vec::new();
        // Operand-size prefix when the operand size is not the code's default.
        if o32 == code16 {
            raw.push(0x66);
        }
        // Memory operands: absolute 32-bit addresses in scratch (address-size prefix in
        // 16-bit code), mod=00 rm=101.
        let scratch = layout::PM_RUN_BASE + layout::C_SCRATCH;
        let mem_op = |raw: &mut Vec<u8>, reg: u8, off: u64| {
            if code16 {
                raw.insert(0, 0x67);
            }
            raw.push((reg << 3) | 0x05);
            raw.extend_from_slice(&((scratch + off) as u32).to_le_bytes());
        };
        // Control transfers in 32-bit code keep the 32-bit operand size: a 16-bit one
        // would return to IP & 0xFFFF, outside the chunk.
        let control = matches!(
            FORMS[form],
            "call rel"
                | "call r"
                | "call m"
                | "call far"
                | "call far m"
                | "ret"
                | "ret imm"
                | "retf"
                | "retf imm"
                | "iret"
        );
        if control && !code16 && !o32 {
            return None;
        }
        match FORMS[form] {
            "push r" => raw.push(0x50 + r.below(8) as u8),
            "pop r" => {
                let reg = [0u8, 1, 2, 3, 5, 6, 7][r.below(7) as usize];
                raw.push(0x58 + reg);
            }
            "push imm8" => {
                raw.push(0x6A);
                raw.push(r.edgy(8) as u8);
            }
            "push imm" => {
                raw.push(0x68);
                raw.extend_from_slice(&r.edgy(32).to_le_bytes()[..size as usize]);
            }
            "push m" => {
                raw.push(0xFF);
                let off = r.below(SCRATCH_LEN as u64 - 4);
                mem_op(&mut raw, 6, off);
            }
            "pop m" => {
                raw.push(0x8F);
                let off = r.below(SCRATCH_LEN as u64 - 4);
                mem_op(&mut raw, 0, off);
            }
            "push sreg" => {
                const PUSH_SREG: [&[u8]; 6] = [
                    &[0x06],
                    &[0x0E],
                    &[0x16],
                    &[0x1E],
                    &[0x0F, 0xA0],
                    &[0x0F, 0xA8],
                ];
                let op: &[u8] = r.pick::<&[u8]>(&PUSH_SREG);
                raw.extend_from_slice(op);
            }
            "pop sreg" => {
                // DS keeps the flat data segment (the harness addresses through it).
                let (op, sel): (&[u8], u16) = match r.below(5) {
                    0 => (&[0x07], *r.pick(&[SEL_DATA32, SEL_DATA16, 0, SEL_STACK16])),
                    1 => (&[0x17], *r.pick(&[SEL_STACK16, SEL_STACK32])),
                    2 => (&[0x1F], SEL_DATA32),
                    3 => (
                        &[0x0F, 0xA1],
                        *r.pick(&[SEL_DATA32, SEL_DATA16, 0, SEL_STACK32]),
                    ),
                    _ => (&[0x0F, 0xA9], *r.pick(&[SEL_DATA32, 0, SEL_STACK16])),
                };
                raw.extend_from_slice(op);
                b.put(0, size, sel as u64);
            }
            "pushf" => raw.push(0x9C),
            "popf" => {
                raw.push(0x9D);
                b.put(0, size, flags_image(r));
            }
            "pusha" => raw.push(0x60),
            "popa" => raw.push(0x61),
            "enter" => {
                let any = r.edgy(16) as u16;
                let alloc = *r.pick(&[0u16, 2, 4, 8, 0x20, 0xFFF0, any]);
                let mut level = r.below(4) as u8;
                // EBP near the window too (nested levels copy from [BP - k*size]).
                b.case.gpr[5] = near_window(r, b.b32);
                // QEMU computes ENTER's frame pointer as ESP - size over 32 bits, so on a
                // 16-bit stack with SP < size it borrows from ESP's upper half (hardware
                // and Aero keep it, test386 POST 1A): exclusions.rs (generator constraints).
                if o32 && !b.b32 && b.sp() < 4 * (level as u64 + 1) {
                    level = 0;
                    b.case.undefined.gprs |= 1 << 5;
                }
                raw.push(0xC8);
                raw.extend_from_slice(&alloc.to_le_bytes());
                raw.push(level);
            }
            "leave" => {
                raw.push(0xC9);
                b.case.gpr[5] = near_window(r, b.b32);
            }
            "call rel" => {
                raw.push(0xE8);
                raw.resize(raw.len() + size as usize, 0);
            }
            "call r" => {
                let reg = [0usize, 1, 2, 3, 5, 6, 7][r.below(7) as usize];
                raw.push(0xFF);
                raw.push(0xD0 | reg as u8);
                b.st.links.push(Link::Gpr {
                    reg,
                    value: LinkValue::Ret,
                });
            }
            "call m" => {
                raw.push(0xFF);
                let off = r.below(SCRATCH_LEN as u64 / 4 - 1) * 4;
                mem_op(&mut raw, 2, off);
                b.st.links.push(Link::Scratch {
                    at: off as usize,
                    size,
                    value: LinkValue::Ret,
                });
            }
            "call far" => {
                raw.push(0x9A);
                let at = raw.len();
                raw.resize(at + size as usize + 2, 0);
                b.st.links.push(Link::FarImm { at, size });
            }
            "call far m" => {
                raw.push(0xFF);
                let off = r.below(SCRATCH_LEN as u64 / 8 - 1) * 8;
                mem_op(&mut raw, 3, off);
                b.st.links.push(Link::Scratch {
                    at: off as usize,
                    size,
                    value: LinkValue::Ret,
                });
                b.st.links.push(Link::Scratch {
                    at: off as usize + size as usize,
                    size: 2,
                    value: LinkValue::Cs,
                });
            }
            "ret" | "ret imm" => {
                if FORMS[form] == "ret" {
                    raw.push(0xC3);
                } else {
                    raw.push(0xC2);
                    let imm = imm_bytes(r);
                    // QEMU sign-extends RET's imm16 (ESP - 2 for 0xFFFE); the SDM adds
                    // it unsigned, as Aero does: exclusions.rs (generator constraints).
                    if b.b32 && imm >= 0x8000 {
                        b.case.undefined.gprs |= 1 << 4;
                    }
                    raw.extend_from_slice(&imm.to_le_bytes());
                }
                b.link(0, size, LinkValue::Ret);
            }
            "retf" | "retf imm" => {
                if FORMS[form] == "retf" {
                    raw.push(0xCB);
                } else {
                    raw.push(0xCA);
                    let imm = imm_bytes(r);
                    // QEMU sign-extends RET's imm16 (ESP - 2 for 0xFFFE); the SDM adds
                    // it unsigned, as Aero does: exclusions.rs (generator constraints).
                    if b.b32 && imm >= 0x8000 {
                        b.case.undefined.gprs |= 1 << 4;
                    }
                    raw.extend_from_slice(&imm.to_le_bytes());
                }
                b.put(0, 2 * size, 0);
                b.link(0, size, LinkValue::Ret);
                b.link(size as u64, 2, LinkValue::Cs);
            }
            "iret" => {
                raw.push(0xCF);
                b.put(0, 2 * size, 0);
                b.link(0, size, LinkValue::Ret);
                b.link(size as u64, 2, LinkValue::Cs);
                b.put(2 * size as u64, size, flags_image(r));
            }
            "int n" => {
                let v = loop {
                    let v = r.below(32) as u8;
                    if !HAS_ERROR_CODE.contains(&v) && v != 2 {
                        break v;
                    }
                };
                raw.push(0xCD);
                raw.push(v);
            }
            "int3" => raw.push(0xCC),
            "into" => {
                raw.push(0xCE);
                if r.chance(70) {
                    b.case.rflags |= 1 << 11;
                }
            }
            _ => return None,
        }
        // Only near/far control transfers and the size-specific forms use the prefix;
        // INT and the byte-immediate push carry it harmlessly.
        Some(raw)
    }
}

/// A FLAGS image for POPF/IRET: arithmetic flags and DF; IF/TF/NT/IOPL/AC/ID clear.
fn flags_image(r: &mut Rng) -> u64 {
    (r.next_u64() & 0x0CD5) | 0x2
}

/// RET imm16: small, odd and wrapping stack adjustments.
fn imm_bytes(r: &mut Rng) -> u16 {
    let any = r.edgy(16) as u16;
    *r.pick(&[0u16, 2, 4, 6, 0x10, 0xFFFE, 0xFFF0, any])
}

/// EBP for ENTER/LEAVE: BP near the window, upper half random (16-bit stack) or ESP-like.
fn near_window(r: &mut Rng, b32: bool) -> u64 {
    let bp = *r.pick(&[0xFFF0u64, 0xFFFC, 0x0000, 0x0004, 0xFFE8, 0x0002]);
    if b32 {
        (bp as u16 as i16 as i64 + 0x1_0000) as u64
    } else {
        (r.edgy(16) << 16) | bp
    }
}
