//! D3D9 shader token stream → typed instructions.
//!
//! The layout (version token, instruction tokens with opcode/control/length, parameter
//! tokens with register type/number/swizzle/modifiers, relative-address tokens, DCL's
//! usage token, DEF's literals, comments, END) is the one the D3D9 DDK documents. Shader
//! model 1 has no instruction lengths: the operand count comes from the opcode. Every
//! count and register number is checked here, so the WGSL writer only sees well-formed
//! instructions.

use super::TranslateError;

/// Instructions a shader may hold (the largest D3D9 instruction-slot count).
pub const MAX_INSTRUCTIONS: usize = 32768;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Vertex,
    Pixel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub stage: Stage,
    pub major: u8,
    pub minor: u8,
}

impl Version {
    /// Ordered as (major, minor); 2.x (minor 1) sits between 2.0 and 3.0.
    pub fn at_least(&self, major: u8, minor: u8) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
}

/// D3DSHADER_PARAM_REGISTER_TYPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegType {
    Temp,
    Input,
    Const,
    /// a0 in vertex shaders, t# in pixel shaders (same encoding).
    AddrOrTexture,
    RastOut,
    AttrOut,
    /// oT# before SM3, o# in vs_3_0.
    Output,
    ConstInt,
    ColorOut,
    DepthOut,
    Sampler,
    ConstBool,
    Loop,
    Misc,
    Label,
    Predicate,
}

impl RegType {
    fn decode(token: u32) -> Result<(RegType, u32), TranslateError> {
        let raw = ((token >> 28) & 0x7) | ((token >> 8) & 0x18);
        let number = token & 0x7FF;
        let ty = match raw {
            0 => RegType::Temp,
            1 => RegType::Input,
            2 => RegType::Const,
            3 => RegType::AddrOrTexture,
            4 => RegType::RastOut,
            5 => RegType::AttrOut,
            6 => RegType::Output,
            7 => RegType::ConstInt,
            8 => RegType::ColorOut,
            9 => RegType::DepthOut,
            10 => RegType::Sampler,
            // CONST2..CONST4: c2048 and up, past anything the device carries.
            11..=13 => return Err(TranslateError::Register { ty: raw, number }),
            14 => RegType::ConstBool,
            15 => RegType::Loop,
            16 => RegType::Temp, // TEMPFLOAT16: a temp at lower precision
            17 => RegType::Misc,
            18 => RegType::Label,
            19 => RegType::Predicate,
            _ => return Err(TranslateError::Register { ty: raw, number }),
        };
        Ok((ty, number))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg {
    pub ty: RegType,
    pub number: u32,
}

/// `[a0.c + n]` or `[aL + n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelAddr {
    pub reg: Reg,
    pub component: u8,
}

/// D3DSHADER_PARAM_SRCMOD_TYPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrcMod {
    None,
    Neg,
    Bias,
    BiasNeg,
    Sign,
    SignNeg,
    Comp,
    X2,
    X2Neg,
    Dz,
    Dw,
    Abs,
    AbsNeg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Src {
    pub reg: Reg,
    /// Source component for each of x, y, z, w.
    pub swizzle: [u8; 4],
    pub modifier: SrcMod,
    pub rel: Option<RelAddr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dst {
    pub reg: Reg,
    /// Bit n = component n written.
    pub mask: u8,
    pub saturate: bool,
    pub centroid: bool,
    /// ps_1_x result shift: the value is scaled by 2^shift (-3..=3).
    pub shift: i8,
    pub rel: Option<RelAddr>,
}

/// D3DDECLUSAGE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Usage {
    Position,
    BlendWeight,
    BlendIndices,
    Normal,
    PSize,
    TexCoord,
    Tangent,
    Binormal,
    TessFactor,
    PositionT,
    Color,
    Fog,
    Depth,
    Sample,
}

impl Usage {
    /// A D3DDECLUSAGE value (shader DCL tokens and vertex declarations number usages
    /// alike).
    pub fn from_d3d(value: u32) -> Option<Usage> {
        const ALL: [Usage; 14] = [
            Usage::Position,
            Usage::BlendWeight,
            Usage::BlendIndices,
            Usage::Normal,
            Usage::PSize,
            Usage::TexCoord,
            Usage::Tangent,
            Usage::Binormal,
            Usage::TessFactor,
            Usage::PositionT,
            Usage::Color,
            Usage::Fog,
            Usage::Depth,
            Usage::Sample,
        ];
        ALL.get(value as usize).copied()
    }

    fn decode(value: u32) -> Result<Usage, TranslateError> {
        Usage::from_d3d(value).ok_or(TranslateError::Malformed("DCL usage"))
    }
}

/// D3DSAMPLER_TEXTURE_TYPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TextureKind {
    #[default]
    Tex2d,
    Cube,
    Volume,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decl {
    /// `dcl_<usage><index> reg` for inputs and (vs_3_0) outputs.
    Semantic {
        dst: Dst,
        usage: Usage,
        index: u8,
    },
    Sampler {
        number: u32,
        kind: TextureKind,
    },
}

/// Comparison of ifc/breakc/setp (instruction control bits 16..18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    Gt,
    Eq,
    Ge,
    Lt,
    Ne,
    Le,
}

/// D3DSHADER_INSTRUCTION_OPCODE_TYPE, the ones with operands this translator knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Nop,
    Mov,
    Add,
    Sub,
    Mad,
    Mul,
    Rcp,
    Rsq,
    Dp3,
    Dp4,
    Min,
    Max,
    Slt,
    Sge,
    Exp,
    Log,
    Lit,
    Dst,
    Lrp,
    Frc,
    M4x4,
    M4x3,
    M3x4,
    M3x3,
    M3x2,
    Call,
    CallNz,
    Loop,
    Ret,
    EndLoop,
    Label,
    Pow,
    Crs,
    Sgn,
    Abs,
    Nrm,
    SinCos,
    Rep,
    EndRep,
    If,
    Ifc,
    Else,
    EndIf,
    Break,
    BreakC,
    Mova,
    TexCoord,
    TexKill,
    Tex,
    TexBem,
    TexBemL,
    TexReg2Ar,
    TexReg2Gb,
    TexM3x2Pad,
    TexM3x2Tex,
    TexM3x3Pad,
    TexM3x3Tex,
    TexM3x3Spec,
    TexM3x3VSpec,
    ExpP,
    LogP,
    Cnd,
    TexReg2Rgb,
    TexDp3Tex,
    TexM3x2Depth,
    TexDp3,
    TexM3x3,
    TexDepth,
    Cmp,
    Bem,
    Dp2Add,
    Dsx,
    Dsy,
    TexLdd,
    Setp,
    TexLdl,
    BreakP,
    Phase,
}

impl Op {
    fn decode(code: u32) -> Option<Op> {
        use Op::*;
        Some(match code {
            0x00 => Nop,
            0x01 => Mov,
            0x02 => Add,
            0x03 => Sub,
            0x04 => Mad,
            0x05 => Mul,
            0x06 => Rcp,
            0x07 => Rsq,
            0x08 => Dp3,
            0x09 => Dp4,
            0x0A => Min,
            0x0B => Max,
            0x0C => Slt,
            0x0D => Sge,
            0x0E => Exp,
            0x0F => Log,
            0x10 => Lit,
            0x11 => Dst,
            0x12 => Lrp,
            0x13 => Frc,
            0x14 => M4x4,
            0x15 => M4x3,
            0x16 => M3x4,
            0x17 => M3x3,
            0x18 => M3x2,
            0x19 => Call,
            0x1A => CallNz,
            0x1B => Loop,
            0x1C => Ret,
            0x1D => EndLoop,
            0x1E => Label,
            0x20 => Pow,
            0x21 => Crs,
            0x22 => Sgn,
            0x23 => Abs,
            0x24 => Nrm,
            0x25 => SinCos,
            0x26 => Rep,
            0x27 => EndRep,
            0x28 => If,
            0x29 => Ifc,
            0x2A => Else,
            0x2B => EndIf,
            0x2C => Break,
            0x2D => BreakC,
            0x2E => Mova,
            0x40 => TexCoord,
            0x41 => TexKill,
            0x42 => Tex,
            0x43 => TexBem,
            0x44 => TexBemL,
            0x45 => TexReg2Ar,
            0x46 => TexReg2Gb,
            0x47 => TexM3x2Pad,
            0x48 => TexM3x2Tex,
            0x49 => TexM3x3Pad,
            0x4A => TexM3x3Tex,
            0x4C => TexM3x3Spec,
            0x4D => TexM3x3VSpec,
            0x4E => ExpP,
            0x4F => LogP,
            0x50 => Cnd,
            0x52 => TexReg2Rgb,
            0x53 => TexDp3Tex,
            0x54 => TexM3x2Depth,
            0x55 => TexDp3,
            0x56 => TexM3x3,
            0x57 => TexDepth,
            0x58 => Cmp,
            0x59 => Bem,
            0x5A => Dp2Add,
            0x5B => Dsx,
            0x5C => Dsy,
            0x5D => TexLdd,
            0x5E => Setp,
            0x5F => TexLdl,
            0x60 => BreakP,
            0xFFFD => Phase,
            _ => return None,
        })
    }

    /// (has a destination, source count) for `version`; None where the opcode does not
    /// exist in that shader model.
    fn operands(self, v: Version) -> Option<(bool, usize)> {
        use Op::*;
        let sm1 = v.major < 2;
        let ps = v.stage == Stage::Pixel;
        let sm3 = v.major >= 3;
        let ps14 = ps && v.major == 1 && v.minor == 4;
        let shape = match self {
            Nop | Phase => (false, 0),
            Mov | Rcp | Rsq | Exp | Log | ExpP | LogP | Frc | Abs | Nrm => (true, 1),
            Lit if !ps => (true, 1),
            Add | Sub | Mul | Dp3 | Dp4 | Min | Max | Slt | Sge | Dst | Pow | Crs => (true, 2),
            M4x4 | M4x3 | M3x4 | M3x3 | M3x2 => (true, 2),
            Mad | Lrp | Cnd | Cmp | Dp2Add => (true, 3),
            Mova if !ps && !sm1 => (true, 1),
            SinCos if !sm1 => (true, if sm3 { 1 } else { 3 }),
            Sgn if !sm1 && !ps => (true, if sm3 { 1 } else { 3 }),
            Call | Label | Rep | If | BreakP if !sm1 => (false, 1),
            // loop/endloop (and aL): vs_2_0 and up, but among pixel shaders only ps_3_0.
            Loop if !sm1 && (!ps || sm3) => (false, 2),
            EndLoop if !sm1 && (!ps || sm3) => (false, 0),
            CallNz | Ifc | BreakC if !sm1 => (false, 2),
            Ret | EndRep | Else | EndIf | Break if !sm1 => (false, 0),
            Setp if !sm1 => (true, 2),
            TexLdl if sm3 || (!sm1 && ps && v.minor > 0) => (true, 2),
            TexLdd | Dsx | Dsy if ps && v.at_least(2, 1) => {
                (true, if self == TexLdd { 4 } else { 1 })
            }
            Tex if ps => (true, if sm1 { usize::from(ps14) } else { 2 }),
            TexCoord if ps && sm1 => (true, usize::from(ps14)),
            TexKill if ps => (true, 0),
            TexDepth if ps14 => (true, 0),
            Bem if ps14 => (true, 2),
            TexM3x3Spec if ps && sm1 && !ps14 => (true, 2),
            TexBem | TexBemL | TexReg2Ar | TexReg2Gb | TexReg2Rgb | TexM3x2Pad | TexM3x2Tex
            | TexM3x3Pad | TexM3x3Tex | TexM3x3VSpec | TexDp3Tex | TexM3x2Depth | TexDp3
            | TexM3x3
                if ps && sm1 && !ps14 =>
            {
                (true, 1)
            }
            _ => return None,
        };
        Some(shape)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub op: Op,
    /// Instruction-specific control bits 16..23 (comparison, texld flavour).
    pub control: u8,
    pub predicate: Option<Src>,
    pub dst: Option<Dst>,
    pub srcs: Vec<Src>,
    /// ps_1_x co-issue (`+` prefix).
    pub coissue: bool,
}

impl Instruction {
    pub fn compare(&self) -> Result<Compare, TranslateError> {
        Ok(match self.control & 7 {
            1 => Compare::Gt,
            2 => Compare::Eq,
            3 => Compare::Ge,
            4 => Compare::Lt,
            5 => Compare::Ne,
            6 => Compare::Le,
            _ => return Err(TranslateError::Malformed("comparison")),
        })
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Defs {
    pub float: Vec<(u32, [f32; 4])>,
    pub int: Vec<(u32, [i32; 4])>,
    pub bool: Vec<(u32, bool)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Shader {
    pub version: Version,
    pub decls: Vec<Decl>,
    pub defs: Defs,
    /// Everything but DCL/DEF*/comments, in order.
    pub instructions: Vec<Instruction>,
}

/// Register-count limits of the translator's register files (the largest of any
/// shader model; per-model limits are checked where they matter for safety only).
pub fn register_limit(ty: RegType, v: Version) -> u32 {
    match ty {
        RegType::Temp => 32,
        RegType::Input => 16,
        RegType::Const => 256,
        RegType::AddrOrTexture => {
            if v.stage == Stage::Vertex {
                1
            } else {
                8
            }
        }
        RegType::RastOut => 3,
        RegType::AttrOut => 2,
        RegType::Output => 12,
        RegType::ConstInt | RegType::ConstBool => 16,
        RegType::ColorOut => 4,
        RegType::DepthOut => 1,
        RegType::Sampler => 16,
        RegType::Loop => 1,
        RegType::Misc => 2,
        RegType::Label => 2048,
        RegType::Predicate => 1,
    }
}

struct Reader<'a> {
    tokens: &'a [u32],
    pos: usize,
    /// Exclusive end of the current instruction's operands.
    end: usize,
    version: Version,
}

impl Reader<'_> {
    fn next(&mut self) -> Result<u32, TranslateError> {
        if self.pos >= self.end {
            return Err(TranslateError::Malformed(
                "instruction shorter than its operands",
            ));
        }
        let t = self.tokens[self.pos];
        self.pos += 1;
        Ok(t)
    }

    fn reg(&self, token: u32) -> Result<Reg, TranslateError> {
        if token & 0x8000_0000 == 0 {
            return Err(TranslateError::Malformed("parameter token without bit 31"));
        }
        let (ty, number) = RegType::decode(token)?;
        if number >= register_limit(ty, self.version) {
            let raw = ((token >> 28) & 0x7) | ((token >> 8) & 0x18);
            return Err(TranslateError::Register { ty: raw, number });
        }
        Ok(Reg { ty, number })
    }

    /// The relative-address part of a parameter with bit 13 set.
    fn rel(&mut self, token: u32) -> Result<Option<RelAddr>, TranslateError> {
        if token & (1 << 13) == 0 {
            return Ok(None);
        }
        if self.version.major < 2 {
            // vs_1_1: always a0.x, no extra token.
            if self.version.stage != Stage::Vertex {
                return Err(TranslateError::Malformed("relative addressing in ps_1_x"));
            }
            return Ok(Some(RelAddr {
                reg: Reg {
                    ty: RegType::AddrOrTexture,
                    number: 0,
                },
                component: 0,
            }));
        }
        let t = self.next()?;
        let reg = self.reg(t)?;
        let is_addr = reg.ty == RegType::Loop
            || (reg.ty == RegType::AddrOrTexture && self.version.stage == Stage::Vertex);
        if !is_addr {
            return Err(TranslateError::Malformed("relative address register"));
        }
        Ok(Some(RelAddr {
            reg,
            component: ((t >> 16) & 3) as u8,
        }))
    }

    fn src(&mut self) -> Result<Src, TranslateError> {
        let t = self.next()?;
        let reg = self.reg(t)?;
        let rel = self.rel(t)?;
        let sw = (t >> 16) & 0xFF;
        let swizzle = [0, 2, 4, 6].map(|s| ((sw >> s) & 3) as u8);
        let modifier = match (t >> 24) & 0xF {
            0 => SrcMod::None,
            1 => SrcMod::Neg,
            2 => SrcMod::Bias,
            3 => SrcMod::BiasNeg,
            4 => SrcMod::Sign,
            5 => SrcMod::SignNeg,
            6 => SrcMod::Comp,
            7 => SrcMod::X2,
            8 => SrcMod::X2Neg,
            9 => SrcMod::Dz,
            10 => SrcMod::Dw,
            11 => SrcMod::Abs,
            12 => SrcMod::AbsNeg,
            13 => SrcMod::Not,
            _ => return Err(TranslateError::Malformed("source modifier")),
        };
        Ok(Src {
            reg,
            swizzle,
            modifier,
            rel,
        })
    }

    fn dst(&mut self) -> Result<Dst, TranslateError> {
        let t = self.next()?;
        let reg = self.reg(t)?;
        let rel = self.rel(t)?;
        let modifiers = (t >> 20) & 0xF;
        if modifiers & !0x7 != 0 {
            return Err(TranslateError::Malformed("result modifier"));
        }
        let shift = (((t >> 24) & 0xF) as i8) << 4 >> 4;
        if !(-3..=3).contains(&shift) {
            return Err(TranslateError::Malformed("result shift"));
        }
        Ok(Dst {
            reg,
            mask: ((t >> 16) & 0xF) as u8,
            saturate: modifiers & 1 != 0,
            centroid: modifiers & 4 != 0,
            shift,
            rel,
        })
    }
}

const OP_COMMENT: u32 = 0xFFFE;
const OP_END: u32 = 0xFFFF;
const OP_DCL: u32 = 0x1F;
const OP_DEF: u32 = 0x51;
const OP_DEFB: u32 = 0x2F;
const OP_DEFI: u32 = 0x30;

/// Parses a whole shader (version token first, END last).
pub fn parse(tokens: &[u32]) -> Result<Shader, TranslateError> {
    let version_token = *tokens.first().ok_or(TranslateError::Malformed("empty"))?;
    let stage = match version_token >> 16 {
        0xFFFE => Stage::Vertex,
        0xFFFF => Stage::Pixel,
        _ => return Err(TranslateError::Version(version_token)),
    };
    let version = Version {
        stage,
        major: (version_token >> 8) as u8,
        minor: version_token as u8,
    };
    let known = match (stage, version.major) {
        (Stage::Vertex, 1) => version.minor <= 1,
        (Stage::Pixel, 1) => version.minor <= 4,
        // vs/ps_2_0 and 2_x (minor 1; the runtime writes 2_sw as 0xFF).
        (_, 2) => version.minor <= 1,
        (_, 3) => version.minor == 0,
        _ => false,
    };
    if !known {
        return Err(TranslateError::Version(version_token));
    }
    let mut shader = Shader {
        version,
        decls: Vec::new(),
        defs: Defs::default(),
        instructions: Vec::new(),
    };
    let mut pos = 1;
    loop {
        let Some(&t) = tokens.get(pos) else {
            return Err(TranslateError::Malformed("no END token"));
        };
        let code = t & 0xFFFF;
        if code == OP_END {
            if pos + 1 != tokens.len() {
                return Err(TranslateError::Malformed("tokens after END"));
            }
            return Ok(shader);
        }
        if code == OP_COMMENT {
            let len = ((t >> 16) & 0x7FFF) as usize;
            pos = pos
                .checked_add(1 + len)
                .filter(|&p| p <= tokens.len())
                .ok_or(TranslateError::Malformed("comment past the end"))?;
            continue;
        }
        if t & 0x8000_0000 != 0 {
            return Err(TranslateError::Malformed("instruction token with bit 31"));
        }
        if shader.instructions.len() + shader.decls.len() >= MAX_INSTRUCTIONS {
            return Err(TranslateError::TooLarge("instruction count"));
        }
        let start = pos + 1;
        let (end, op) = if version.major >= 2 {
            let len = ((t >> 24) & 0xF) as usize;
            (start + len, Op::decode(code))
        } else {
            let op = Op::decode(code);
            let len = match code {
                OP_DCL => 2,
                OP_DEF => 5,
                _ => {
                    let op = op.ok_or(TranslateError::Opcode(code))?;
                    let (dst, srcs) = op.operands(version).ok_or(TranslateError::Opcode(code))?;
                    usize::from(dst) + srcs
                }
            };
            (start + len, op)
        };
        if end > tokens.len() {
            return Err(TranslateError::Malformed("instruction past the end"));
        }
        let mut r = Reader {
            tokens,
            pos: start,
            end,
            version,
        };
        match code {
            OP_DCL => shader.decls.push(parse_dcl(&mut r)?),
            OP_DEF | OP_DEFI | OP_DEFB => parse_def(&mut r, code, &mut shader.defs)?,
            _ => {
                let op = op.ok_or(TranslateError::Opcode(code))?;
                let (has_dst, srcs) = op.operands(version).ok_or(TranslateError::Opcode(code))?;
                let predicated = t & (1 << 28) != 0;
                if predicated && version.major < 2 {
                    return Err(TranslateError::Malformed("predication before SM2"));
                }
                let dst = if has_dst { Some(r.dst()?) } else { None };
                let predicate = if predicated { Some(r.src()?) } else { None };
                if let Some(p) = predicate
                    && p.reg.ty != RegType::Predicate
                {
                    return Err(TranslateError::Malformed("predicate operand"));
                }
                let srcs = (0..srcs).map(|_| r.src()).collect::<Result<Vec<_>, _>>()?;
                shader.instructions.push(Instruction {
                    op,
                    control: ((t >> 16) & 0xFF) as u8,
                    predicate,
                    dst,
                    srcs,
                    coissue: t & (1 << 30) != 0,
                });
            }
        }
        if r.pos != end {
            return Err(TranslateError::Malformed("instruction length"));
        }
        pos = end;
    }
}

fn parse_dcl(r: &mut Reader) -> Result<Decl, TranslateError> {
    let usage_token = r.next()?;
    let dst = r.dst()?;
    if dst.reg.ty == RegType::Sampler {
        let kind = match (usage_token >> 27) & 0xF {
            2 => TextureKind::Tex2d,
            3 => TextureKind::Cube,
            4 => TextureKind::Volume,
            _ => return Err(TranslateError::Malformed("sampler texture type")),
        };
        return Ok(Decl::Sampler {
            number: dst.reg.number,
            kind,
        });
    }
    Ok(Decl::Semantic {
        dst,
        usage: Usage::decode(usage_token & 0x1F)?,
        index: ((usage_token >> 16) & 0xF) as u8,
    })
}

fn parse_def(r: &mut Reader, code: u32, defs: &mut Defs) -> Result<(), TranslateError> {
    let dst = r.dst()?;
    let n = dst.reg.number;
    match (code, dst.reg.ty) {
        (OP_DEF, RegType::Const) => {
            let v = [r.next()?, r.next()?, r.next()?, r.next()?].map(f32::from_bits);
            defs.float.retain(|d| d.0 != n);
            defs.float.push((n, v));
        }
        (OP_DEFI, RegType::ConstInt) => {
            let v = [r.next()?, r.next()?, r.next()?, r.next()?].map(|x| x as i32);
            defs.int.retain(|d| d.0 != n);
            defs.int.push((n, v));
        }
        (OP_DEFB, RegType::ConstBool) => {
            let v = r.next()? != 0;
            defs.bool.retain(|d| d.0 != n);
            defs.bool.push((n, v));
        }
        _ => return Err(TranslateError::Malformed("DEF register type")),
    }
    Ok(())
}
