//! Deterministic case generator.
//!
//! Instructions are drawn per category from iced-x86's encoding table (every legacy
//! encoding of the category's mnemonics that the mode supports and whose CPUID feature
//! our profile has), operands are filled with random and edge-case values, and the
//! operand-dependent "undefined" rules of the SDM are applied to the case.

use iced_x86::{
    Code, CpuidFeature, EncodingKind, FastFormatter, Instruction, MemoryOperand, MemorySize,
    Mnemonic, OpCodeOperandKind as K, Register, RepPrefixKind,
};

use super::case::{Case, Mode, Undefined};
use super::exclusions;
use super::fpvals;
use super::layout::{self, SCRATCH_LEN};
use super::rng::Rng;

const ALU: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Add, Or, Adc, Sbb, And, Sub, Xor, Cmp, Test, Inc, Dec, Neg, Not,
    ]
};
const SHIFT: &[Mnemonic] = {
    use Mnemonic::*;
    &[Rol, Ror, Rcl, Rcr, Shl, Shr, Sar, Shld, Shrd]
};
const MULDIV: &[Mnemonic] = {
    use Mnemonic::*;
    &[Mul, Imul, Div, Idiv]
};
const BITS: &[Mnemonic] = {
    use Mnemonic::*;
    &[Bt, Bts, Btr, Btc, Bsf, Bsr, Bswap]
};
const BCD: &[Mnemonic] = {
    use Mnemonic::*;
    &[Daa, Das, Aaa, Aas, Aam, Aad]
};
const MISC: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Movzx, Movsx, Movsxd, Cmovo, Cmovno, Cmovb, Cmovae, Cmove, Cmovne, Cmovbe, Cmova, Cmovs,
        Cmovns, Cmovp, Cmovnp, Cmovl, Cmovge, Cmovle, Cmovg, Seto, Setno, Setb, Setae, Sete, Setne,
        Setbe, Seta, Sets, Setns, Setp, Setnp, Setl, Setge, Setle, Setg, Xchg, Xadd, Cmpxchg,
        Cmpxchg8b, Cmpxchg16b, Lahf, Sahf, Clc, Stc, Cmc, Cld, Std, Cbw, Cwde, Cdqe, Cwd, Cdq, Cqo,
        Lea, Mov, Push, Pop, Pushf, Pushfd, Pushfq,
    ]
};
/// Segment register loads and stores (ES/FS/GS; the harness owns CS/DS/SS): protection
/// checks and #GP error codes in protected and long mode.
const SEGMENT: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Mov, Les, Lfs, Lgs, Push, Pop, Lar, Lsl, Verr, Verw, Arpl, Sgdt, Sidt, Str, Sldt,
    ]
};
/// Software interrupts and exceptions raised by the instruction itself: delivery through
/// the IVT, 32-bit and 64-bit IDT, trap vs. fault return address.
const TRAP: &[Mnemonic] = {
    use Mnemonic::*;
    &[Int, Int3, Into, Ud2, Bound]
};
const X87: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Fld, Fst, Fstp, Fild, Fist, Fistp, Fadd, Faddp, Fsub, Fsubp, Fsubr, Fsubrp, Fmul, Fmulp,
        Fdiv, Fdivp, Fdivr, Fdivrp, Fiadd, Fisub, Fisubr, Fimul, Fidiv, Fidivr, Fcom, Fcomp,
        Fcompp, Fucom, Fucomp, Fucompp, Ficom, Ficomp, Fcomi, Fcomip, Fucomi, Fucomip, Ftst, Fxam,
        Fchs, Fabs, Fsqrt, Frndint, Fscale, Fxtract, Fprem, Fprem1, Fxch, Fld1, Fldz, Fldpi,
        Fldl2e, Fldl2t, Fldlg2, Fldln2, Fdecstp, Fincstp, Ffree, Fnstsw, Fnstcw, Fldcw, Fcmovb,
        Fcmove, Fcmovbe, Fcmovu, Fcmovnb, Fcmovne, Fcmovnbe, Fcmovnu, Fbld, Fbstp, F2xm1, Fyl2x,
        Fyl2xp1, Fpatan, Fnclex, Fnop, Fsin, Fcos, Fptan, Fsincos,
    ]
};
const SSE: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Movaps, Movups, Movss, Movsd, Movapd, Movupd, Movlps, Movhps, Movlpd, Movhpd, Movhlps,
        Movlhps, Movd, Movq, Movdqa, Movdqu, Addps, Addss, Addpd, Addsd, Subps, Subss, Subpd,
        Subsd, Mulps, Mulss, Mulpd, Mulsd, Divps, Divss, Divpd, Divsd, Sqrtps, Sqrtss, Sqrtpd,
        Sqrtsd, Maxps, Maxss, Maxpd, Maxsd, Minps, Minss, Minpd, Minsd, Andps, Andpd, Andnps,
        Andnpd, Orps, Orpd, Xorps, Xorpd, Cmpps, Cmpss, Cmppd, Cmpsd, Comiss, Ucomiss, Comisd,
        Ucomisd, Cvtsi2ss, Cvtss2si, Cvttss2si, Cvtsi2sd, Cvtsd2si, Cvttsd2si, Cvtsd2ss, Cvtss2sd,
        Cvtdq2ps, Cvtps2dq, Cvttps2dq, Cvtdq2pd, Cvtpd2dq, Cvttpd2dq, Cvtps2pd, Cvtpd2ps, Unpcklps,
        Unpckhps, Unpcklpd, Unpckhpd, Shufps, Shufpd, Pshufd, Pshuflw, Pshufhw, Paddb, Paddw,
        Paddd, Paddq, Paddsb, Paddsw, Paddusb, Paddusw, Psubb, Psubw, Psubd, Psubq, Psubsb, Psubsw,
        Psubusb, Psubusw, Pmullw, Pmulhw, Pmulhuw, Pmuludq, Pmaddwd, Pand, Pandn, Por, Pxor,
        Pcmpeqb, Pcmpeqw, Pcmpeqd, Pcmpgtb, Pcmpgtw, Pcmpgtd, Packsswb, Packssdw, Packuswb,
        Punpcklbw, Punpcklwd, Punpckldq, Punpcklqdq, Punpckhbw, Punpckhwd, Punpckhdq, Punpckhqdq,
        Psllw, Pslld, Psllq, Psrlw, Psrld, Psrlq, Psraw, Psrad, Pslldq, Psrldq, Pavgb, Pavgw,
        Psadbw, Pmaxsw, Pmaxub, Pminsw, Pminub, Pmovmskb, Movmskps, Movmskpd, Pextrw, Pinsrw,
        Ldmxcsr, Stmxcsr, Movntps, Movntpd, Movntdq, Movnti, Maskmovdqu, Rcpps, Rcpss, Rsqrtps,
        Rsqrtss,
    ]
};

/// SSSE3, both forms: MMX registers (m64) and XMM registers (m128).
const SSSE3: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Pshufb, Phaddw, Phaddd, Phaddsw, Pmaddubsw, Phsubw, Phsubd, Phsubsw, Psignb, Psignw,
        Psignd, Pmulhrsw, Pabsb, Pabsw, Pabsd, Palignr,
    ]
};

/// The MMX instruction set on MMX registers (the XMM forms of the same mnemonics belong
/// to "sse"), and EMMS.
const MMX: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Movd, Movq, Paddb, Paddw, Paddd, Paddsb, Paddsw, Paddusb, Paddusw, Psubb, Psubw, Psubd,
        Psubsb, Psubsw, Psubusb, Psubusw, Pmullw, Pmulhw, Pmaddwd, Pand, Pandn, Por, Pxor, Pcmpeqb,
        Pcmpeqw, Pcmpeqd, Pcmpgtb, Pcmpgtw, Pcmpgtd, Packsswb, Packssdw, Packuswb, Punpcklbw,
        Punpcklwd, Punpckldq, Punpckhbw, Punpckhwd, Punpckhdq, Psllw, Pslld, Psllq, Psrlw, Psrld,
        Psrlq, Psraw, Psrad, Emms,
    ]
};

/// SSE/SSE2 instructions on MMX registers: the SSE "MMX extensions", the SSE2 quadword
/// ops on mm, MOVQ2DQ/MOVDQ2Q and the mm <-> xmm conversions. Only encodings with an MMX
/// operand (the XMM forms belong to "sse").
const MMXSSE: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Pavgb, Pavgw, Pminub, Pmaxub, Pminsw, Pmaxsw, Pmulhuw, Psadbw, Pshufw, Pextrw, Pinsrw,
        Pmovmskb, Movntq, Maskmovq, Paddq, Psubq, Pmuludq, Movq2dq, Movdq2q, Cvtpi2ps, Cvtps2pi,
        Cvttps2pi, Cvtpi2pd, Cvtpd2pi, Cvttpd2pi,
    ]
};

/// The mm <-> xmm conversions of MMXSSE (floating-point inputs, MXCSR flags).
const MMX_CONVERSIONS: &[Mnemonic] = {
    use Mnemonic::*;
    &[Cvtpi2ps, Cvtps2pi, Cvttps2pi, Cvtpi2pd, Cvtpd2pi, Cvttpd2pi]
};

/// (category, weight, mnemonics). "string" is generated separately.
const CATEGORIES: &[(&str, u64, &[Mnemonic])] = &[
    ("alu", 26, ALU),
    ("shift", 12, SHIFT),
    ("muldiv", 9, MULDIV),
    ("bits", 8, BITS),
    ("bcd", 4, BCD),
    ("misc", 9, MISC),
    ("segment", 4, SEGMENT),
    ("x87", 12, X87),
    ("sse", 12, SSE),
    ("ssse3", 8, SSSE3),
    ("mmx", 6, MMX),
    ("mmxsse", 6, MMXSSE),
    ("string", 8, &[]),
    ("branch", 5, &[]),
    ("trap", 3, TRAP),
];

/// CPUID features of the profile under test (QEMU `-cpu qemu64,+ssse3` has all of them).
/// MMX register operands are only generated by the categories that ask for them
/// (`usable_codes`); MMX is here because iced-x86 tags PADDQ mm (SSE2) as MMX.
const ALLOWED_FEATURES: &[CpuidFeature] = &[
    CpuidFeature::MMX,
    CpuidFeature::INTEL8086,
    CpuidFeature::INTEL186,
    CpuidFeature::INTEL286,
    CpuidFeature::INTEL386,
    CpuidFeature::INTEL486,
    CpuidFeature::X64,
    CpuidFeature::CMOV,
    CpuidFeature::CX8,
    CpuidFeature::CMPXCHG16B,
    CpuidFeature::FPU,
    CpuidFeature::FPU387,
    CpuidFeature::SSE,
    CpuidFeature::SSE2,
    CpuidFeature::SSSE3,
];

pub struct Generator {
    rng: Rng,
    /// Per mode (index `Mode as usize`), per category: the usable encodings.
    table: Vec<Vec<(&'static str, u64, Vec<Code>)>>,
    formatter: FastFormatter,
}

impl Generator {
    pub fn new(seed: u64) -> Self {
        let table = Mode::ALL
            .iter()
            .map(|&mode| {
                CATEGORIES
                    .iter()
                    .map(|&(name, weight, mnemonics)| {
                        let mmx = matches!(name, "ssse3" | "mmx" | "mmxsse");
                        let mut codes = usable_codes(mnemonics, mode, mmx);
                        if matches!(name, "mmx" | "mmxsse") {
                            codes.retain(|c| {
                                c.mnemonic() == Mnemonic::Emms
                                    || c.op_code().op_kinds().iter().any(|k| MMX_KINDS.contains(k))
                            });
                        }
                        (name, weight, codes)
                    })
                    .filter(|(name, _, codes)| {
                        matches!(*name, "string" | "branch") || !codes.is_empty()
                    })
                    .collect()
            })
            .collect();
        Generator {
            rng: Rng::new(seed),
            table,
            formatter: FastFormatter::new(),
        }
    }

    /// Number of distinct encodings per (mode, category), for the report.
    pub fn coverage(&self) -> Vec<(Mode, &'static str, usize)> {
        let mut out = Vec::new();
        for (mi, cats) in self.table.iter().enumerate() {
            for (name, _, codes) in cats {
                out.push((Mode::ALL[mi], *name, codes.len()));
            }
        }
        out
    }

    /// Case `id`: modes rotate so every batch covers all three.
    pub fn case(&mut self, id: u32) -> Case {
        let mode = Mode::ALL[(id % 3) as usize];
        loop {
            let cats = &self.table[mode as usize];
            let total: u64 = cats.iter().map(|c| c.1).sum();
            let mut roll = self.rng.below(total);
            let mut pick = 0;
            for (i, c) in cats.iter().enumerate() {
                if roll < c.1 {
                    pick = i;
                    break;
                }
                roll -= c.1;
            }
            let (category, _, codes) = &cats[pick];
            let category: &'static str = category;
            let built = if category == "string" {
                self.string_case(mode)
            } else if category == "branch" {
                self.branch_case(mode)
            } else {
                let code = *self.rng.pick(codes);
                self.generic_case(mode, code, category)
            };
            if let Some(mut case) = built {
                case.id = id;
                case.category = category;
                case.text.clear();
                self.formatter.format(&case.insn, &mut case.text);
                return case;
            }
        }
    }

    fn blank(&mut self, mode: Mode) -> Case {
        let mut gpr = [0u64; 16];
        for (i, g) in gpr.iter_mut().enumerate().take(mode.gpr_count()) {
            let bits = if mode == Mode::Long64 { 64 } else { 32 };
            *g = if i == 4 { 0 } else { self.rng.edgy(bits) };
        }
        // Arithmetic flags and DF random; IF/TF/IOPL/NT stay clear (the harness owns them).
        let mut rflags = 0x2;
        for bit in [0u64, 2, 4, 6, 7, 10, 11] {
            if self.rng.chance(50) {
                rflags |= 1 << bit;
            }
        }
        let mut mem = [0u8; SCRATCH_LEN];
        for b in mem.iter_mut() {
            *b = self.rng.next_u64() as u8;
        }
        Case {
            id: 0,
            mode,
            category: "",
            insn: Instruction::default(),
            text: String::new(),
            gpr,
            rflags,
            mem,
            fx: None,
            undefined: Undefined::default(),
            raw: None,
            stack: None,
        }
    }

    fn scratch_addr(mode: Mode) -> u64 {
        layout::chunk_code_base(mode) + layout::C_SCRATCH
    }

    fn mem_operand(&mut self, mode: Mode, size: usize) -> (MemoryOperand, usize) {
        let size = size.clamp(1, 16);
        let max = SCRATCH_LEN - size;
        // m128 always aligned (see exclusions: QEMU does not fault on misaligned SSE).
        let off = if size == 16 || self.rng.chance(75) {
            (self.rng.below(max as u64 / 16 + 1) * 16) as usize
        } else {
            self.rng.below(max as u64 + 1) as usize
        };
        let displ_size = if mode == Mode::Real { 2 } else { 4 };
        (
            MemoryOperand::with_displ(Self::scratch_addr(mode) + off as u64, displ_size),
            off,
        )
    }

    fn generic_case(&mut self, mode: Mode, code: Code, category: &'static str) -> Option<Case> {
        let mut case = self.blank(mode);
        let op_code = code.op_code();
        let mnemonic = code.mnemonic();
        let mem_size = op_code.memory_size();
        let mut ops: Vec<Op> = Vec::new();
        let mut mem_off = None;
        for &kind in op_code.op_kinds() {
            let op = match kind {
                K::r8_or_mem
                | K::r16_or_mem
                | K::r32_or_mem
                | K::r64_or_mem
                | K::xmm_or_mem
                | K::mm_or_mem => {
                    if self.rng.chance(60) {
                        Op::R(self.reg_for(kind, mode))
                    } else {
                        let (m, off) = self.mem_operand(mode, mem_size.size());
                        mem_off = Some(off);
                        Op::M(m)
                    }
                }
                K::mem => {
                    let (m, off) = self.mem_operand(mode, mem_size.size().max(1));
                    mem_off = Some(off);
                    Op::M(m)
                }
                K::r8_reg
                | K::r8_opcode
                | K::r16_reg
                | K::r16_opcode
                | K::r16_rm
                | K::r32_reg
                | K::r32_opcode
                | K::r32_rm
                | K::r64_reg
                | K::r64_opcode
                | K::r64_rm
                | K::xmm_reg
                | K::xmm_rm
                | K::mm_reg
                | K::mm_rm => Op::R(self.reg_for(kind, mode)),
                K::seg_rDI => {
                    // MASKMOVQ/MASKMOVDQU store through DS:rDI: point it into scratch.
                    let max = SCRATCH_LEN as u64 - 16;
                    let off = if self.rng.chance(50) {
                        self.rng.below(max / 8 + 1) * 8
                    } else {
                        self.rng.below(max + 1)
                    };
                    case.gpr[7] = Self::scratch_addr(mode) + off;
                    Op::Di(mode.bitness())
                }
                K::seg_reg => Op::R(*self.rng.pick(&[Register::ES, Register::FS, Register::GS])),
                K::es => Op::R(Register::ES),
                K::fs => Op::R(Register::FS),
                K::gs => Op::R(Register::GS),
                K::al => Op::R(Register::AL),
                K::cl => Op::R(Register::CL),
                K::ax => Op::R(Register::AX),
                K::eax => Op::R(Register::EAX),
                K::rax => Op::R(Register::RAX),
                K::st0 => Op::R(Register::ST0),
                K::sti_opcode => Op::R(*self.rng.pick(&ST_REGS)),
                K::imm8_const_1 => Op::I(1),
                K::imm8 => Op::I(self.imm8(mnemonic, category) as i64),
                K::imm8sex16 | K::imm8sex32 | K::imm8sex64 => {
                    Op::I(self.rng.edgy(8) as u8 as i8 as i64)
                }
                K::imm16 => Op::I(self.rng.edgy(16) as i64),
                K::imm32 => Op::I(self.rng.edgy(32) as u32 as i32 as i64),
                K::imm32sex64 => Op::I(self.rng.edgy(32) as u32 as i32 as i64),
                K::imm64 => Op::I(self.rng.edgy(64) as i64),
                _ => return None,
            };
            ops.push(op);
        }
        // A pushing x87 instruction finds ST(7) empty (the slot it pushes into): reading it
        // would be a stack fault, which QEMU does not model (see exclusions).
        if X87_PUSHES.contains(&mnemonic) && ops.iter().any(|o| matches!(o, Op::R(Register::ST7))) {
            return None;
        }
        let insn = build(code, &ops)?;
        case.insn = insn;
        // Operand-value rules.
        match mnemonic {
            Mnemonic::Bt | Mnemonic::Bts | Mnemonic::Btr | Mnemonic::Btc => {
                if let (Some(Op::M(_)), Some(Op::R(r))) = (ops.first(), ops.get(1)) {
                    // The register bit offset reaches outside the operand: keep it in scratch.
                    let (m, _) = (
                        MemoryOperand::with_displ(
                            Self::scratch_addr(mode) + 48,
                            if mode == Mode::Real { 2 } else { 4 },
                        ),
                        48,
                    );
                    let r = *r;
                    case.insn = build(code, &[Op::M(m), Op::R(r)])?;
                    let v = (self.rng.below(384) as i64 - 128) as u64;
                    set_reg(&mut case.gpr, r, v);
                }
            }
            Mnemonic::Div | Mnemonic::Idiv if self.rng.chance(60) => {
                self.tame_division(&mut case, &ops, mem_off);
            }
            _ => {}
        }
        if mnemonic == Mnemonic::Idiv
            && exclusions::idiv_crashes_qemu(
                &case,
                self.operand_value(
                    &case,
                    &ops[0],
                    mem_off,
                    case.insn.memory_size().size().max(match ops[0] {
                        Op::R(r) => r.size(),
                        _ => 0,
                    }),
                ),
            )
        {
            return None;
        }
        if category == "segment" {
            // Only instructions that involve a segment register belong here.
            let implicit = matches!(
                mnemonic,
                Mnemonic::Les
                    | Mnemonic::Lfs
                    | Mnemonic::Lgs
                    | Mnemonic::Lar
                    | Mnemonic::Lsl
                    | Mnemonic::Verr
                    | Mnemonic::Verw
                    | Mnemonic::Arpl
                    | Mnemonic::Sgdt
                    | Mnemonic::Sidt
                    | Mnemonic::Str
                    | Mnemonic::Sldt
            );
            if !implicit
                && !ops
                    .iter()
                    .any(|o| matches!(o, Op::R(r) if r.is_segment_register()))
            {
                return None;
            }
            self.selector_inputs(&mut case, &ops, mem_off);
        }
        if category == "shift" {
            if ops.iter().any(|o| matches!(o, Op::R(Register::CL))) {
                let c = *self.rng.pick(&SHIFT_COUNTS);
                let rcx = case.gpr[1];
                case.gpr[1] = (rcx & !0xFF) | c;
            }
            if !self.shift_rules(&mut case, &ops) {
                return None;
            }
        }
        if category == "mmxsse" && MMX_CONVERSIONS.contains(&mnemonic) {
            self.mmx_conversion_inputs(&mut case, mem_size, mem_off);
        } else if matches!(category, "ssse3" | "mmx" | "mmxsse") {
            self.simd_int_inputs(&mut case, mem_size, mem_off);
        }
        if category == "mmx" {
            self.mmx_shift_count(&mut case, &ops, mem_off);
        }
        if matches!(category, "ssse3" | "mmx" | "mmxsse")
            && let Some(Op::R(r)) = ops.first()
            && r.is_mm()
        {
            // See exclusions::MMX_WRITE_EXPONENT.
            case.undefined.st_high |= 1 << (*r as usize - Register::MM0 as usize);
        }
        if category == "x87" || category == "sse" {
            self.fp_inputs(&mut case, mem_size, mem_off);
            if mnemonic == Mnemonic::Ldmxcsr
                && let Some(off) = mem_off
            {
                // Keep SIMD exceptions masked (see exclusions: #XM is not compared).
                let v = 0x1F80
                    | (self.rng.below(4) << 13) as u32
                    | (self.rng.below(2) << 15) as u32
                    | (self.rng.below(2) << 6) as u32
                    | self.rng.below(64) as u32;
                case.mem[off..off + 4].copy_from_slice(&v.to_le_bytes());
            }
            if mnemonic == Mnemonic::Fldcw
                && let Some(off) = mem_off
            {
                // Exceptions masked, random rounding and (valid) precision control.
                let v: u16 = 0x007F
                    | ((self.rng.below(4) as u16) << 10)
                    | ((*self.rng.pick(&[0u16, 2, 3])) << 8);
                case.mem[off..off + 2].copy_from_slice(&v.to_le_bytes());
            }
            case.undefined.fsw = fsw_undefined(mnemonic);
            avoid_nan_pairs(&mut case, &ops, mem_off);
        }
        if mnemonic == Mnemonic::Cmpxchg
            && mode == Mode::Long64
            && let (Op::R(dest), Op::R(_)) = (ops[0], ops[1])
            && dest.size() == 4
            && reg_value(&case.gpr, dest) != case.gpr[0] & 0xFFFF_FFFF
        {
            case.undefined.gprs |= 1 << reg_index(dest);
        }
        if mnemonic == Mnemonic::Bswap
            && let Some(Op::R(r)) = ops.first()
            && r.size() == 2
        {
            // SDM: BSWAP of a 16-bit register leaves it undefined.
            case.undefined.gprs |= 1 << reg_index(*r);
        }
        if matches!(
            mnemonic,
            Mnemonic::Fcomi | Mnemonic::Fcomip | Mnemonic::Fucomi | Mnemonic::Fucomip
        ) {
            case.undefined.flags |= exclusions::FCOMI_FLAGS_IGNORED;
        }
        if matches!(mnemonic, Mnemonic::Bsf | Mnemonic::Bsr) {
            let src = self.operand_value(&case, &ops[1], mem_off, mem_size.size());
            if src == 0 {
                // Dest is undefined for a zero source (Intel); flags other than ZF too.
                if let Op::R(r) = ops[0] {
                    case.undefined.gprs |= 1 << reg_index(r);
                }
            }
        }
        case.undefined.flags |= iced_to_eflags(case.insn.rflags_undefined());
        Some(case)
    }

    /// A selector worth loading: valid flat data, code (readable), null, RPL 3, beyond the
    /// GDT limit, LDT (none loaded), or random.
    fn selector(&mut self, mode: Mode) -> u16 {
        if mode == Mode::Real {
            return self.rng.edgy(16) as u16;
        }
        let random = self.rng.next_u64() as u16;
        *self.rng.pick(&[
            0u16, 0x10, 0x10, 0x13, 0x20, 0x08, 0x18, 0x28, 0x30, 0x38, 0x04, 0x03, 0xFFFF, random,
        ])
    }

    fn selector_inputs(&mut self, case: &mut Case, ops: &[Op], mem_off: Option<usize>) {
        let m = case.insn.mnemonic();
        let sel = self.selector(case.mode);
        if matches!(m, Mnemonic::Les | Mnemonic::Lfs | Mnemonic::Lgs) {
            // m16:16 / m16:32 / m16:64: offset first, selector last.
            if let Some(off) = mem_off {
                let size = case.insn.memory_size().size();
                if size >= 4 && off + size <= SCRATCH_LEN {
                    case.mem[off + size - 2..off + size].copy_from_slice(&sel.to_le_bytes());
                }
            }
        } else if matches!(
            m,
            Mnemonic::Lar | Mnemonic::Lsl | Mnemonic::Verr | Mnemonic::Verw | Mnemonic::Arpl
        ) {
            // The selector operand: the source of LAR/LSL/ARPL, the only operand of VERR/VERW.
            let op = if matches!(m, Mnemonic::Verr | Mnemonic::Verw) {
                ops.first()
            } else {
                ops.get(1)
            };
            match op {
                Some(Op::R(r)) => set_reg(&mut case.gpr, *r, sel as u64),
                Some(Op::M(_)) => {
                    if let Some(off) = mem_off {
                        case.mem[off..off + 2].copy_from_slice(&sel.to_le_bytes());
                    }
                }
                _ => {}
            }
        } else if m == Mnemonic::Mov
            && let (Some(Op::R(dst)), Some(src)) = (ops.first(), ops.get(1))
            && dst.is_segment_register()
        {
            match src {
                Op::R(r) => set_reg(&mut case.gpr, *r, sel as u64),
                Op::M(_) => {
                    if let Some(off) = mem_off {
                        case.mem[off..off + 2].copy_from_slice(&sel.to_le_bytes());
                    }
                }
                Op::I(_) | Op::Di(_) => {}
            }
        }
    }

    fn imm8(&mut self, mnemonic: Mnemonic, category: &str) -> u8 {
        if category == "shift" {
            return *self.rng.pick(&SHIFT_COUNTS) as u8;
        }
        match mnemonic {
            Mnemonic::Cmpps | Mnemonic::Cmpss | Mnemonic::Cmppd | Mnemonic::Cmpsd => {
                self.rng.below(8) as u8
            }
            // Vectors with a stub that expects no error code (INT n never pushes one).
            Mnemonic::Int => *self
                .rng
                .pick(&[0u8, 1, 2, 3, 4, 5, 6, 7, 9, 15, 16, 18, 19, 20, 22, 25, 31]),
            Mnemonic::Psllw
            | Mnemonic::Pslld
            | Mnemonic::Psllq
            | Mnemonic::Psrlw
            | Mnemonic::Psrld
            | Mnemonic::Psrlq
            | Mnemonic::Psraw
            | Mnemonic::Psrad
            | Mnemonic::Pslldq
            | Mnemonic::Psrldq => *self.rng.pick(&SHIFT_COUNTS) as u8,
            // Mostly within the concatenation (0..=32), sometimes far beyond.
            Mnemonic::Palignr if self.rng.chance(80) => self.rng.below(34) as u8,
            _ => self.rng.edgy(8) as u8,
        }
    }

    /// Make a division that does not overflow (most of the time the quotient fits).
    fn tame_division(&mut self, case: &mut Case, ops: &[Op], mem_off: Option<usize>) {
        let size = case.insn.memory_size().size().max(match ops[0] {
            Op::R(r) => r.size(),
            _ => 0,
        });
        let size = if size == 0 { 4 } else { size };
        let divisor = self.operand_value(case, &ops[0], mem_off, size);
        let bits = (size * 8) as u32;
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let signed = case.insn.mnemonic() == Mnemonic::Idiv;
        let low = self.rng.edgy(bits);
        let high = if signed {
            if low & (1 << (bits - 1)) != 0 {
                mask
            } else {
                0
            }
        } else if divisor == 0 {
            0
        } else {
            self.rng.below(divisor)
        };
        match size {
            1 => {
                let ax = ((high & 0xFF) << 8) | (low & 0xFF);
                case.gpr[0] = (case.gpr[0] & !0xFFFF) | ax;
            }
            _ => {
                set_sized(&mut case.gpr[0], size, low);
                set_sized(&mut case.gpr[2], size, high);
            }
        }
    }

    /// Value of a source operand from the case inputs (register or scratch memory).
    fn operand_value(&self, case: &Case, op: &Op, mem_off: Option<usize>, size: usize) -> u64 {
        match op {
            Op::R(r) => reg_value(&case.gpr, *r),
            Op::M(_) => {
                let off = mem_off.unwrap_or(0);
                let mut b = [0u8; 8];
                let n = size.clamp(1, 8);
                b[..n].copy_from_slice(&case.mem[off..off + n]);
                u64::from_le_bytes(b)
            }
            Op::I(v) => *v as u64,
            Op::Di(_) => 0,
        }
    }

    /// Count-dependent undefined results of shifts and rotates. False: regenerate.
    fn shift_rules(&mut self, case: &mut Case, ops: &[Op]) -> bool {
        let m = case.insn.mnemonic();
        let size = match ops[0] {
            Op::R(r) => r.size(),
            _ => case.insn.memory_size().size(),
        };
        let count_op = ops.last().copied();
        let raw = match count_op {
            Some(Op::R(Register::CL)) => case.gpr[1] & 0xFF,
            Some(Op::I(v)) => v as u64 & 0xFF,
            _ => 1, // the "by 1" encodings
        };
        let masked = raw & if size == 8 { 0x3F } else { 0x1F };
        const OF: u64 = 0x800;
        const AF: u64 = 0x10;
        if masked != 1 {
            case.undefined.flags |= OF;
        }
        if masked != 0
            && matches!(
                m,
                Mnemonic::Shl | Mnemonic::Shr | Mnemonic::Sar | Mnemonic::Shld | Mnemonic::Shrd
            )
        {
            case.undefined.flags |= AF;
        }
        if matches!(m, Mnemonic::Shld | Mnemonic::Shrd) && masked as usize > size * 8 {
            // Result and flags undefined (16-bit operand with count > 16): not a useful case.
            return false;
        }
        true
    }

    /// x87/SSE register state and FP-looking memory for an FP case.
    fn fp_inputs(&mut self, case: &mut Case, mem_size: MemorySize, mem_off: Option<usize>) {
        let mut fx = Box::new([0u8; 512]);
        let rc = self.rng.below(4) as u16;
        // Precision control only without memory operands (see exclusions).
        let pc = if mem_off.is_none() && PC_AFFECTED.contains(&case.insn.mnemonic()) {
            *self.rng.pick(&[0u16, 2, 3, 3])
        } else {
            3
        };
        let fcw: u16 = 0x0040 | 0x3F | (pc << 8) | (rc << 10);
        // A full stack (one free slot for pushing instructions): see the x87 stack-fault
        // exclusion; QEMU does not model empty/full register faults for arithmetic.
        let depth = if X87_PUSHES.contains(&case.insn.mnemonic()) {
            7
        } else {
            8
        };
        let top = self.rng.below(8) as u16;
        let cc = (self.rng.below(16) as u16) & 0xF;
        let fsw =
            (top << 11) | ((cc & 1) << 8) | ((cc & 2) << 8) | ((cc & 4) << 8) | ((cc & 8) << 11);
        let mut ftw = 0u8;
        for i in 0..depth {
            ftw |= 1 << ((top as usize + i) & 7);
        }
        fx[0..2].copy_from_slice(&fcw.to_le_bytes());
        fx[2..4].copy_from_slice(&fsw.to_le_bytes());
        fx[4] = ftw;
        let min_max = matches!(
            case.insn.mnemonic(),
            Mnemonic::Minps
                | Mnemonic::Minss
                | Mnemonic::Minpd
                | Mnemonic::Minsd
                | Mnemonic::Maxps
                | Mnemonic::Maxss
                | Mnemonic::Maxpd
                | Mnemonic::Maxsd
        );
        let ftz_daz = if !min_max && self.rng.chance(20) {
            0x8040
        } else {
            0
        };
        let mxcsr: u32 = 0x1F80 | ((self.rng.below(4) as u32) << 13) | ftz_daz;
        fx[24..28].copy_from_slice(&mxcsr.to_le_bytes());
        for i in 0..8 {
            let v = fpvals::f80(&mut self.rng);
            fx[32 + i * 16..32 + i * 16 + 10].copy_from_slice(&v);
        }
        let nxmm = if case.mode == Mode::Long64 { 16 } else { 8 };
        for i in 0..nxmm {
            let v = fpvals::xmm(&mut self.rng);
            fx[160 + i * 16..176 + i * 16].copy_from_slice(&v);
        }
        // Keep F2XM1 / FYL2XP1 inside the domain where the SDM defines the result.
        let m = case.insn.mnemonic();
        if matches!(m, Mnemonic::Fyl2x | Mnemonic::Fyl2xp1)
            && u16::from_le_bytes([fx[56], fx[57]]) & 0x7FFF == 0
        {
            // Denormal ST1: QEMU's result is off by a factor of two (see exclusions).
            fx[48..58].copy_from_slice(&fpvals::from_f64(1.5, false));
        }
        if m == Mnemonic::F2xm1 || m == Mnemonic::Fyl2xp1 {
            let max_exp = if m == Mnemonic::F2xm1 { 0x3FFE } else { 0x3FFC };
            let exp = max_exp - self.rng.below(30) as u16;
            let sign = (self.rng.below(2) as u16) << 15;
            let mant = (1u64 << 63) | (self.rng.next_u64() >> 1);
            fx[32..40].copy_from_slice(&mant.to_le_bytes());
            fx[40..42].copy_from_slice(&(sign | exp).to_le_bytes());
        }
        case.fx = Some(fx);
        if let Some(off) = mem_off {
            let room = SCRATCH_LEN - off;
            let bytes: Vec<u8> = match mem_size {
                MemorySize::Float32 => fpvals::f32_bits(&mut self.rng).to_le_bytes().to_vec(),
                MemorySize::Float64 => fpvals::f64_bits(&mut self.rng).to_le_bytes().to_vec(),
                MemorySize::Float80 => fpvals::f80(&mut self.rng).to_vec(),
                MemorySize::Bcd => fpvals::bcd80(&mut self.rng).to_vec(),
                MemorySize::Int16 => (self.rng.edgy(16) as u16).to_le_bytes().to_vec(),
                MemorySize::Int32 => (self.rng.edgy(32) as u32).to_le_bytes().to_vec(),
                MemorySize::Int64 => self.rng.edgy(64).to_le_bytes().to_vec(),
                _ => fpvals::xmm(&mut self.rng).to_vec(),
            };
            let n = bytes.len().min(room);
            case.mem[off..off + n].copy_from_slice(&bytes[..n]);
        }
    }

    /// Integer SIMD (SSSE3) inputs: the x87/SSE state of `fp_inputs`, then every XMM
    /// register, every MMX register (ST slot significand) and the memory operand filled
    /// with packed integers at the edges of a random lane width.
    fn simd_int_inputs(&mut self, case: &mut Case, mem_size: MemorySize, mem_off: Option<usize>) {
        self.fp_inputs(case, mem_size, mem_off);
        let nxmm = if case.mode == Mode::Long64 { 16 } else { 8 };
        let mut regs = Vec::with_capacity(nxmm + 8);
        for _ in 0..nxmm + 8 {
            regs.push(self.int_vector());
        }
        let Some(fx) = case.fx.as_mut() else { return };
        for (i, v) in regs.iter().take(nxmm).enumerate() {
            fx[160 + i * 16..176 + i * 16].copy_from_slice(v);
        }
        for (i, v) in regs.iter().skip(nxmm).enumerate() {
            fx[32 + i * 16..40 + i * 16].copy_from_slice(&v[..8]);
        }
        if let Some(off) = mem_off {
            let v = self.int_vector();
            let n = mem_size.size().clamp(1, 16).min(SCRATCH_LEN - off);
            case.mem[off..off + n].copy_from_slice(&v[..n]);
        }
        case.undefined.fsw = 0;
    }

    /// MMX shifts by an mm/m64 count: mostly a small count (the packed-integer inputs are
    /// nearly always >= 64, which only clears or fills the destination).
    fn mmx_shift_count(&mut self, case: &mut Case, ops: &[Op], mem_off: Option<usize>) {
        use Mnemonic::*;
        let shift = matches!(
            case.insn.mnemonic(),
            Psllw | Pslld | Psllq | Psrlw | Psrld | Psrlq | Psraw | Psrad
        );
        if !shift || !self.rng.chance(70) {
            return;
        }
        let count = self.rng.pick(&SHIFT_COUNTS).to_le_bytes();
        match ops.get(1) {
            Some(Op::R(r)) if r.is_mm() => {
                if let Some(fx) = case.fx.as_mut() {
                    let o = 32 + (*r as usize - Register::MM0 as usize) * 16;
                    fx[o..o + 8].copy_from_slice(&count);
                }
            }
            Some(Op::M(_)) => {
                if let Some(off) = mem_off {
                    case.mem[off..off + 8].copy_from_slice(&count);
                }
            }
            _ => {}
        }
    }

    /// mm <-> xmm conversions: the FP state of `fp_inputs` (edge values in the XMM
    /// registers and float memory operands), packed 32-bit integers at the edges in every
    /// MMX register and in integer memory operands (CVTPI2PS/PD m64).
    fn mmx_conversion_inputs(
        &mut self,
        case: &mut Case,
        mem_size: MemorySize,
        mem_off: Option<usize>,
    ) {
        self.fp_inputs(case, mem_size, mem_off);
        let mut mm = [[0u8; 8]; 8];
        for v in mm.iter_mut() {
            *v = self.int32_pair();
        }
        if let Some(fx) = case.fx.as_mut() {
            for (i, v) in mm.iter().enumerate() {
                fx[32 + i * 16..40 + i * 16].copy_from_slice(v);
            }
        }
        if let (Some(off), MemorySize::Packed64_Int32) = (mem_off, mem_size) {
            let v = self.int32_pair();
            case.mem[off..off + 8].copy_from_slice(&v);
        }
        if case.insn.mnemonic() == Mnemonic::Cvtpi2pd && mem_off.is_some() {
            // Already in MMX state (TOP = 0, every tag valid): see exclusions, QEMU 7.2
            // switches to MMX state for CVTPI2PD xmm, m64 too.
            if let Some(fx) = case.fx.as_mut() {
                fx[3] &= !0x38;
                fx[4] = 0xFF;
            }
        }
        // Not x87 arithmetic: the condition codes are defined (unchanged).
        case.undefined.fsw = 0;
    }

    /// Two 32-bit integer lanes (edge or random values).
    fn int32_pair(&mut self) -> [u8; 8] {
        let lo = self.rng.edgy(32) & 0xFFFF_FFFF;
        let hi = self.rng.edgy(32) & 0xFFFF_FFFF;
        (lo | (hi << 32)).to_le_bytes()
    }

    /// 16 bytes of packed integers: lanes of 8, 16, 32 or 64 bits with edge values
    /// (0, 1, -1, the signed extremes and their neighbours, single bits) or random.
    fn int_vector(&mut self) -> [u8; 16] {
        let bits = *self.rng.pick(&[8u32, 16, 16, 32, 64]);
        let mut v = 0u128;
        for lane in 0..128 / bits {
            v |= (self.rng.edgy(bits) as u128) << (lane * bits);
        }
        v.to_le_bytes()
    }

    /// MOVS/STOS/LODS/CMPS/SCAS with and without REP, all element sizes and both directions.
    fn string_case(&mut self, mode: Mode) -> Option<Case> {
        let mut case = self.blank(mode);
        let addr_size = match mode {
            Mode::Real => 16,
            Mode::Prot32 => 32,
            Mode::Long64 => *self.rng.pick(&[64u32, 64, 32]),
        };
        let sizes: &[u32] = if mode == Mode::Long64 {
            &[1, 2, 4, 8]
        } else {
            &[1, 2, 4]
        };
        let elem = *self.rng.pick(sizes);
        let kind = self.rng.below(5);
        let rep = match (kind, self.rng.below(3)) {
            (_, 0) => RepPrefixKind::None,
            (3 | 4, 1) => RepPrefixKind::Repne,
            _ => RepPrefixKind::Repe,
        };
        let seg = Register::None;
        let insn = match (kind, elem) {
            (0, 1) => Instruction::with_movsb(addr_size, seg, rep),
            (0, 2) => Instruction::with_movsw(addr_size, seg, rep),
            (0, 4) => Instruction::with_movsd(addr_size, seg, rep),
            (0, _) => Instruction::with_movsq(addr_size, seg, rep),
            (1, 1) => Instruction::with_stosb(addr_size, rep),
            (1, 2) => Instruction::with_stosw(addr_size, rep),
            (1, 4) => Instruction::with_stosd(addr_size, rep),
            (1, _) => Instruction::with_stosq(addr_size, rep),
            (2, 1) => Instruction::with_lodsb(addr_size, seg, rep),
            (2, 2) => Instruction::with_lodsw(addr_size, seg, rep),
            (2, 4) => Instruction::with_lodsd(addr_size, seg, rep),
            (2, _) => Instruction::with_lodsq(addr_size, seg, rep),
            (3, 1) => Instruction::with_cmpsb(addr_size, seg, rep),
            (3, 2) => Instruction::with_cmpsw(addr_size, seg, rep),
            (3, 4) => Instruction::with_cmpsd(addr_size, seg, rep),
            (3, _) => Instruction::with_cmpsq(addr_size, seg, rep),
            (_, 1) => Instruction::with_scasb(addr_size, rep),
            (_, 2) => Instruction::with_scasw(addr_size, rep),
            (_, 4) => Instruction::with_scasd(addr_size, rep),
            (_, _) => Instruction::with_scasq(addr_size, rep),
        }
        .ok()?;
        case.insn = insn;
        let base = Self::scratch_addr(mode);
        // Pointers in the middle of scratch so 4 elements of 8 bytes fit either way.
        let si = base + 32 + self.rng.below(33);
        let di = base + 32 + self.rng.below(33);
        let count = *self.rng.pick(&[0u64, 1, 2, 3, 4]);
        let high_noise = |rng: &mut Rng, v: u64, bits: u32| -> u64 {
            if bits >= 64 {
                v
            } else {
                (rng.next_u64() << bits) | v
            }
        };
        // Address-size bits above the used width are random to check they are ignored
        // (and, for 32-bit addressing in long mode, cleared on write-back).
        let (si, di, cx) = match addr_size {
            16 => (
                high_noise(&mut self.rng, si & 0xFFFF, 16),
                high_noise(&mut self.rng, di & 0xFFFF, 16),
                high_noise(&mut self.rng, count, 16),
            ),
            32 if mode == Mode::Long64 => (
                high_noise(&mut self.rng, si, 32),
                high_noise(&mut self.rng, di, 32),
                high_noise(&mut self.rng, count, 32),
            ),
            _ => (si, di, count),
        };
        let width_mask = if mode == Mode::Long64 {
            u64::MAX
        } else {
            0xFFFF_FFFF
        };
        case.gpr[6] = si & width_mask;
        case.gpr[7] = di & width_mask;
        case.gpr[1] = cx & width_mask;
        // A small alphabet so REPE/REPNE comparisons stop at interesting places.
        for b in case.mem.iter_mut() {
            *b = self.rng.below(2) as u8;
        }
        if self.rng.chance(50) {
            case.gpr[0] &= !0xFF;
        }
        case.undefined.flags |= iced_to_eflags(case.insn.rflags_undefined());
        Some(case)
    }

    /// Jcc / LOOP / LOOPE / LOOPNE / JCXZ-JECXZ-JRCXZ (both address sizes) jumping over
    /// `lea ebp, [ebp+1]`: EBP tells whether the branch was taken, ECX shows the count.
    fn branch_case(&mut self, mode: Mode) -> Option<Case> {
        let mut case = self.blank(mode);
        // lea ebp,[ebp+1] (lea rbp,[rbp+1] in long mode): changes no flags.
        let marker: &[u8] = match mode {
            Mode::Real => &[0x66, 0x67, 0x8D, 0x6D, 0x01],
            Mode::Prot32 => &[0x8D, 0x6D, 0x01],
            Mode::Long64 => &[0x48, 0x8D, 0x6D, 0x01],
        };
        let mut raw = Vec::new();
        match self.rng.below(3) {
            0 => raw.push(0x70 | self.rng.below(16) as u8),
            _ => {
                if self.rng.chance(35) {
                    raw.push(0x67); // the other address size: CX vs ECX (ECX vs RCX in long mode)
                }
                raw.push(*self.rng.pick(&[0xE0u8, 0xE1, 0xE2, 0xE3]));
                case.gpr[1] = match self.rng.below(4) {
                    0 => case.gpr[1] & !0xFFFF_FFFF,
                    1 => (case.gpr[1] & !0xFFFF) | 1,
                    2 => (case.gpr[1] & !0xFFFF_FFFF) | 0x1_0000, // CX = 0 but ECX != 0
                    _ => case.gpr[1],
                };
            }
        }
        raw.push(marker.len() as u8);
        let mut decoder =
            iced_x86::Decoder::new(mode.bitness(), &raw, iced_x86::DecoderOptions::NONE);
        case.insn = decoder.decode();
        if case.insn.is_invalid() {
            return None;
        }
        raw.extend_from_slice(marker);
        case.raw = Some(raw);
        Some(case)
    }

    fn reg_for(&mut self, kind: K, mode: Mode) -> Register {
        let long = mode == Mode::Long64;
        let list: &[Register] = match kind {
            K::r8_or_mem | K::r8_reg | K::r8_opcode => {
                if long {
                    &R8_LONG
                } else {
                    &R8
                }
            }
            K::r16_or_mem | K::r16_reg | K::r16_opcode | K::r16_rm => {
                if long {
                    &R16_LONG
                } else {
                    &R16
                }
            }
            K::r32_or_mem | K::r32_reg | K::r32_opcode | K::r32_rm => {
                if long {
                    &R32_LONG
                } else {
                    &R32
                }
            }
            K::r64_or_mem | K::r64_reg | K::r64_opcode | K::r64_rm => &R64,
            K::mm_or_mem | K::mm_reg | K::mm_rm => &MM,
            _ => {
                if long {
                    &XMM_LONG
                } else {
                    &XMM
                }
            }
        };
        *self.rng.pick(list)
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    R(Register),
    M(MemoryOperand),
    I(i64),
    /// The implicit DS:rDI operand of MASKMOVQ/MASKMOVDQU (address size).
    Di(u32),
}

fn build(code: Code, ops: &[Op]) -> Option<Instruction> {
    use Op::*;
    let r = match ops {
        [] => Ok(Instruction::with(code)),
        [R(a)] => Instruction::with1(code, *a),
        [M(a)] => Instruction::with1(code, *a),
        [I(a)] => Instruction::with1(code, *a as i32),
        [R(a), R(b)] => Instruction::with2(code, *a, *b),
        [R(a), M(b)] => Instruction::with2(code, *a, *b),
        [M(a), R(b)] => Instruction::with2(code, *a, *b),
        [R(a), I(b)] => {
            if code.op_code().op_kinds().get(1) == Some(&K::imm64) {
                Instruction::with2(code, *a, *b)
            } else {
                Instruction::with2(code, *a, *b as i32)
            }
        }
        [M(a), I(b)] => Instruction::with2(code, *a, *b as i32),
        [R(a), R(b), R(c)] => Instruction::with3(code, *a, *b, *c),
        [R(a), R(b), I(c)] => Instruction::with3(code, *a, *b, *c as i32),
        [R(a), M(b), I(c)] => Instruction::with3(code, *a, *b, *c as i32),
        [M(a), R(b), I(c)] => Instruction::with3(code, *a, *b, *c as i32),
        [M(a), R(b), R(c)] => Instruction::with3(code, *a, *b, *c),
        [R(a), M(b), R(c)] => Instruction::with3(code, *a, *b, *c),
        [R(a), R(b), M(c)] => Instruction::with3(code, *a, *b, *c),
        [Di(size), R(a), R(b)] => match code.mnemonic() {
            Mnemonic::Maskmovq => Instruction::with_maskmovq(*size, *a, *b, Register::None),
            Mnemonic::Maskmovdqu => Instruction::with_maskmovdqu(*size, *a, *b, Register::None),
            _ => return None,
        },
        _ => return None,
    };
    r.ok()
}

/// `mmx`: MMX register operands are allowed (only the ssse3, mmx and mmxsse categories
/// generate them).
fn usable_codes(mnemonics: &[Mnemonic], mode: Mode, mmx: bool) -> Vec<Code> {
    Code::values()
        .filter(|&c| {
            let oc = c.op_code();
            if !oc.is_instruction()
                || oc.encoding() != EncodingKind::Legacy
                || !mnemonics.contains(&c.mnemonic())
            {
                return false;
            }
            let mode_ok = match mode {
                Mode::Real => oc.mode16(),
                Mode::Prot32 => oc.mode32(),
                Mode::Long64 => oc.mode64(),
            };
            if !mode_ok
                || !c
                    .cpuid_features()
                    .iter()
                    .all(|f| ALLOWED_FEATURES.contains(f))
            {
                return false;
            }
            if exclusions::excluded_mnemonic(c.mnemonic()).is_some()
                || exclusions::excluded_code(c).is_some()
            {
                return false;
            }
            if exclusions::undocumented_alias(c).is_some() {
                return false;
            }
            oc.op_kinds()
                .iter()
                .all(|k| SUPPORTED_KINDS.contains(k) || (mmx && MMX_KINDS.contains(k)))
        })
        .collect()
}

const SUPPORTED_KINDS: &[K] = &[
    K::r8_or_mem,
    K::r16_or_mem,
    K::r32_or_mem,
    K::r64_or_mem,
    K::xmm_or_mem,
    K::mem,
    K::r8_reg,
    K::r8_opcode,
    K::r16_reg,
    K::r16_opcode,
    K::r16_rm,
    K::r32_reg,
    K::r32_opcode,
    K::r32_rm,
    K::r64_reg,
    K::r64_opcode,
    K::r64_rm,
    K::xmm_reg,
    K::xmm_rm,
    K::seg_reg,
    K::es,
    K::fs,
    K::gs,
    K::al,
    K::cl,
    K::ax,
    K::eax,
    K::rax,
    K::st0,
    K::sti_opcode,
    K::imm8_const_1,
    K::imm8,
    K::imm8sex16,
    K::imm8sex32,
    K::imm8sex64,
    K::imm16,
    K::imm32,
    K::imm32sex64,
    K::imm64,
    K::seg_rDI,
];

const MMX_KINDS: &[K] = &[K::mm_reg, K::mm_rm, K::mm_or_mem];

const SHIFT_COUNTS: [u64; 18] = [
    0, 1, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 200, 255,
];

// SP is never an explicit operand: the harness owns the stack.
const R8: [Register; 8] = [
    Register::AL,
    Register::CL,
    Register::DL,
    Register::BL,
    Register::AH,
    Register::CH,
    Register::DH,
    Register::BH,
];
const R8_LONG: [Register; 15] = [
    Register::AL,
    Register::CL,
    Register::DL,
    Register::BL,
    Register::BPL,
    Register::SIL,
    Register::DIL,
    Register::R8L,
    Register::R9L,
    Register::R10L,
    Register::R11L,
    Register::R12L,
    Register::R13L,
    Register::R14L,
    Register::R15L,
];
const R16: [Register; 7] = [
    Register::AX,
    Register::CX,
    Register::DX,
    Register::BX,
    Register::BP,
    Register::SI,
    Register::DI,
];
const R16_LONG: [Register; 15] = [
    Register::AX,
    Register::CX,
    Register::DX,
    Register::BX,
    Register::BP,
    Register::SI,
    Register::DI,
    Register::R8W,
    Register::R9W,
    Register::R10W,
    Register::R11W,
    Register::R12W,
    Register::R13W,
    Register::R14W,
    Register::R15W,
];
const R32: [Register; 7] = [
    Register::EAX,
    Register::ECX,
    Register::EDX,
    Register::EBX,
    Register::EBP,
    Register::ESI,
    Register::EDI,
];
const R32_LONG: [Register; 15] = [
    Register::EAX,
    Register::ECX,
    Register::EDX,
    Register::EBX,
    Register::EBP,
    Register::ESI,
    Register::EDI,
    Register::R8D,
    Register::R9D,
    Register::R10D,
    Register::R11D,
    Register::R12D,
    Register::R13D,
    Register::R14D,
    Register::R15D,
];
const R64: [Register; 15] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RBX,
    Register::RBP,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
    Register::R12,
    Register::R13,
    Register::R14,
    Register::R15,
];
const XMM: [Register; 8] = [
    Register::XMM0,
    Register::XMM1,
    Register::XMM2,
    Register::XMM3,
    Register::XMM4,
    Register::XMM5,
    Register::XMM6,
    Register::XMM7,
];
const XMM_LONG: [Register; 16] = [
    Register::XMM0,
    Register::XMM1,
    Register::XMM2,
    Register::XMM3,
    Register::XMM4,
    Register::XMM5,
    Register::XMM6,
    Register::XMM7,
    Register::XMM8,
    Register::XMM9,
    Register::XMM10,
    Register::XMM11,
    Register::XMM12,
    Register::XMM13,
    Register::XMM14,
    Register::XMM15,
];
const MM: [Register; 8] = [
    Register::MM0,
    Register::MM1,
    Register::MM2,
    Register::MM3,
    Register::MM4,
    Register::MM5,
    Register::MM6,
    Register::MM7,
];
const ST_REGS: [Register; 8] = [
    Register::ST0,
    Register::ST1,
    Register::ST2,
    Register::ST3,
    Register::ST4,
    Register::ST5,
    Register::ST6,
    Register::ST7,
];

fn is_high8(r: Register) -> bool {
    matches!(r, Register::AH | Register::CH | Register::DH | Register::BH)
}

pub fn reg_index(r: Register) -> usize {
    (r.full_register() as usize).wrapping_sub(Register::RAX as usize) & 15
}

fn reg_value(gpr: &[u64; 16], r: Register) -> u64 {
    let v = gpr[reg_index(r)];
    if is_high8(r) {
        return (v >> 8) & 0xFF;
    }
    match r.size() {
        1 => v & 0xFF,
        2 => v & 0xFFFF,
        4 => v & 0xFFFF_FFFF,
        _ => v,
    }
}

fn set_reg(gpr: &mut [u64; 16], r: Register, value: u64) {
    let i = reg_index(r);
    if is_high8(r) {
        gpr[i] = (gpr[i] & !0xFF00) | ((value & 0xFF) << 8);
    } else {
        set_sized(&mut gpr[i], r.size(), value);
    }
}

fn set_sized(slot: &mut u64, size: usize, value: u64) {
    let mask = match size {
        1 => 0xFF,
        2 => 0xFFFF,
        4 => 0xFFFF_FFFF,
        _ => u64::MAX,
    };
    *slot = (*slot & !mask) | (value & mask);
}

/// iced's RflagsBits → architectural EFLAGS bits.
fn iced_to_eflags(bits: u32) -> u64 {
    use iced_x86::RflagsBits as F;
    let map = [
        (F::OF, 0x800u64),
        (F::SF, 0x80),
        (F::ZF, 0x40),
        (F::AF, 0x10),
        (F::CF, 0x1),
        (F::PF, 0x4),
        (F::DF, 0x400),
        (F::IF, 0x200),
        (F::AC, 0x40000),
    ];
    map.iter()
        .filter(|(f, _)| bits & f != 0)
        .map(|(_, e)| e)
        .sum()
}

/// x87 condition codes the SDM calls undefined for this instruction (C0=0x100, C1=0x200,
/// C2=0x400, C3=0x4000).
fn fsw_undefined(m: Mnemonic) -> u16 {
    use Mnemonic::*;
    (match m {
        Fcom | Fcomp | Fcompp | Fucom | Fucomp | Fucompp | Ficom | Ficomp | Ftst | Fxam | Fprem
        | Fprem1 | Fcomi | Fcomip | Fucomi | Fucomip => 0,
        Fnstsw | Fnstcw | Fldcw | Fnclex | Ffree | Fnop => 0x4700,
        Ldmxcsr | Stmxcsr => return 0,
        _ if SSE.contains(&m) || SSSE3.contains(&m) || MMX.contains(&m) || MMXSSE.contains(&m) => {
            return 0;
        }
        _ => 0x4500,
    }) | exclusions::FSW_IGNORED
}

/// The x87 instructions whose result precision control rounds (SDM 8.1.5.2); the others
/// run with 64-bit precision (see exclusions: QEMU applies PC to more).
const PC_AFFECTED: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Fadd, Faddp, Fsub, Fsubp, Fsubr, Fsubrp, Fmul, Fmulp, Fdiv, Fdivp, Fdivr, Fdivrp, Fsqrt,
    ]
};

fn f80_is_nan(b: &[u8]) -> bool {
    let exp = u16::from_le_bytes([b[8], b[9]]) & 0x7FFF;
    let mant = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
    exp == 0x7FFF && mant << 1 != 0
}

fn lane_is_nan(b: &[u8]) -> bool {
    match b.len() {
        4 => {
            let v = u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
            v & 0x7F80_0000 == 0x7F80_0000 && v & 0x007F_FFFF != 0
        }
        8 => {
            let v = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            v & 0x7FF0_0000_0000_0000 == 0x7FF0_0000_0000_0000 && v & 0x000F_FFFF_FFFF_FFFF != 0
        }
        _ => f80_is_nan(b),
    }
}

fn one_point_five(len: usize) -> Vec<u8> {
    match len {
        4 => 1.5f32.to_bits().to_le_bytes().to_vec(),
        8 => 1.5f64.to_bits().to_le_bytes().to_vec(),
        _ => fpvals::from_f64(1.5, false).to_vec(),
    }
}

/// Never give a two-operand FP instruction two NaNs (see exclusions: QEMU 7.2 picks the
/// propagated NaN with softfloat's rule, not the SDM's table 4-7). The second operand is
/// replaced by 1.5 where both are NaN.
fn avoid_nan_pairs(case: &mut Case, ops: &[Op], mem_off: Option<usize>) {
    let Some(fx) = case.fx.as_mut() else { return };
    let m = case.insn.mnemonic();
    let st = |r: Register| 32 + (r as usize - Register::ST0 as usize) * 16;
    if X87.contains(&m) {
        let regs: Vec<Register> = ops
            .iter()
            .filter_map(|o| {
                if let Op::R(r) = o {
                    (r.is_st()).then_some(*r)
                } else {
                    None
                }
            })
            .collect();
        let mem_len = match case.insn.memory_size() {
            MemorySize::Float32 => 4,
            MemorySize::Float64 => 8,
            MemorySize::Float80 => 10,
            _ => 0,
        };
        let first = st(Register::ST0);
        if matches!(
            m,
            Mnemonic::Fyl2x
                | Mnemonic::Fyl2xp1
                | Mnemonic::Fpatan
                | Mnemonic::Fscale
                | Mnemonic::Fcompp
                | Mnemonic::Fucompp
        ) {
            let second = st(Register::ST1);
            if f80_is_nan(&fx[first..first + 10]) && f80_is_nan(&fx[second..second + 10]) {
                fx[second..second + 10].copy_from_slice(&one_point_five(10));
            }
        } else if regs.len() == 2 {
            let (a, b) = (st(regs[0]), st(regs[1]));
            if f80_is_nan(&fx[a..a + 10]) && f80_is_nan(&fx[b..b + 10]) {
                fx[b..b + 10].copy_from_slice(&one_point_five(10));
            }
        } else if let (Some(off), true) = (mem_off, mem_len > 0)
            && f80_is_nan(&fx[first..first + 10])
            && lane_is_nan(&case.mem[off..off + mem_len])
        {
            case.mem[off..off + mem_len].copy_from_slice(&one_point_five(mem_len));
        }
        return;
    }
    // SSE floating-point with two sources: lane width from the mnemonic's suffix.
    let name = format!("{m:?}").to_ascii_lowercase();
    let lane = if name.ends_with("ps") || name.ends_with("ss") {
        4
    } else if name.ends_with("pd") || name.ends_with("sd") {
        8
    } else {
        return;
    };
    let xmm = |r: Register| 160 + (r as usize - Register::XMM0 as usize) * 16;
    let (Some(Op::R(dest)), Some(src)) = (ops.first(), ops.get(1)) else {
        return;
    };
    if !dest.is_xmm() {
        return;
    }
    let d = xmm(*dest);
    for l in 0..16 / lane {
        let dl = d + l * lane;
        if !lane_is_nan(&fx[dl..dl + lane]) {
            continue;
        }
        match src {
            Op::R(r) if r.is_xmm() => {
                let sl = xmm(*r) + l * lane;
                if *r != *dest && lane_is_nan(&fx[sl..sl + lane]) {
                    fx[sl..sl + lane].copy_from_slice(&one_point_five(lane));
                }
            }
            Op::M(_) => {
                if let Some(off) = mem_off {
                    let so = off + l * lane;
                    if so + lane <= case.mem.len() && lane_is_nan(&case.mem[so..so + lane]) {
                        case.mem[so..so + lane].copy_from_slice(&one_point_five(lane));
                    }
                }
            }
            _ => {}
        }
    }
}

/// x87 instructions that push onto the register stack.
const X87_PUSHES: &[Mnemonic] = {
    use Mnemonic::*;
    &[
        Fld, Fild, Fbld, Fld1, Fldz, Fldpi, Fldl2e, Fldl2t, Fldlg2, Fldln2, Fxtract, Fptan, Fsincos,
    ]
};
