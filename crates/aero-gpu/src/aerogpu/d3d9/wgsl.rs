//! Typed D3D9 instructions → WGSL text.
//!
//! Every D3D9 register becomes a module-scope `var<private>` (so label subroutines,
//! which become WGSL functions, see the same registers); the entry point copies its
//! inputs in, calls `shader_main`, and builds its outputs from the output registers.
//! Derivatives in non-uniform control flow are what D3D9 hardware does too (the
//! result is merely undefined), so fragment modules turn WGSL's uniformity
//! diagnostic off rather than refuse such shaders.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::parse::{
    Compare, Decl, Dst, Instruction, Op, Reg, RegType, Shader, Src, SrcMod, Stage, TextureKind,
    Usage,
};
use super::{
    MAX_WGSL_BYTES, SamplerUse, TextureRead, TranslateError, Translated, VariantKey, VertexInput,
    bindings, varying_location,
};

/// Deepest if/loop nesting accepted (D3D9 allows 24 levels of dynamic flow control).
const MAX_NESTING: usize = 64;
/// D3D9 clamps loop/rep counts to 255.
const MAX_LOOP_COUNT: i32 = 255;

const COMPONENTS: [char; 4] = ['x', 'y', 'z', 'w'];

fn unsupported(what: &'static str) -> TranslateError {
    TranslateError::Unsupported(what)
}

fn malformed(what: &'static str) -> TranslateError {
    TranslateError::Malformed(what)
}

/// Where an output register goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutputSlot {
    Position,
    Varying(u32),
    /// Written but not passed on (point size, semantics without a location).
    Dropped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    If { has_else: bool },
    Loop { id: usize },
    Rep,
}

struct Function {
    name: String,
    body: String,
    calls: BTreeSet<u32>,
}

struct Writer<'a> {
    shader: &'a Shader,
    key: &'a VariantKey,
    stage: Stage,
    sm1: bool,
    /// Registers read or written, for the private declarations.
    regs: BTreeSet<(u8, u32)>,
    samplers: BTreeMap<u32, TextureKind>,
    /// Pixel inputs: register (type, number) → location.
    /// SM3 may pack several semantics into one register, each in its own
    /// components (kept in place: `dcl_texcoord1 v0.zw` reads texcoord 1's .zw).
    ps_inputs: BTreeMap<(u8, u32), Vec<(u32, u8)>>,
    /// Vertex shader output registers → slot.
    vs_outputs: BTreeMap<(u8, u32), Vec<(OutputSlot, u8)>>,
    uses_vpos: bool,
    uses_vface: bool,
    needs_read_c: bool,
    /// SM3 `v[aL + n]`: every declared input is loaded and read through read_v.
    needs_read_v: bool,
    functions: Vec<Function>,
    labels: BTreeSet<u32>,
    next_id: usize,
    size: usize,
}

fn reg_key(reg: Reg) -> (u8, u32) {
    (reg.ty as u8, reg.number)
}

fn swizzle_text(sw: [u8; 4]) -> String {
    sw.iter().map(|&c| COMPONENTS[usize::from(c & 3)]).collect()
}

/// An i32 literal WGSL accepts (`-2147483648` would negate an out-of-range literal).
fn int(v: i32) -> String {
    if v == i32::MIN {
        "(-2147483647i - 1i)".into()
    } else {
        format!("{v}i")
    }
}

fn float(v: f32) -> String {
    if v.is_subnormal() {
        "0.0".into()
    } else if v.is_finite() {
        // `{:?}` always prints a decimal point or an exponent, so WGSL reads an f32.
        format!("{v:?}")
    } else if v.is_nan() {
        "0.0".into()
    } else if v > 0.0 {
        "3.4028235e38".into()
    } else {
        "-3.4028235e38".into()
    }
}

fn vec4_f(v: [f32; 4]) -> String {
    format!(
        "vec4<f32>({}, {}, {}, {})",
        float(v[0]),
        float(v[1]),
        float(v[2]),
        float(v[3])
    )
}

fn compare_op(c: Compare) -> &'static str {
    match c {
        Compare::Gt => ">",
        Compare::Eq => "==",
        Compare::Ge => ">=",
        Compare::Lt => "<",
        Compare::Ne => "!=",
        Compare::Le => "<=",
    }
}

/// Applies a source modifier to `e` (a vec4 or a scalar expression).
fn modify(e: String, m: SrcMod) -> Result<String, TranslateError> {
    Ok(match m {
        SrcMod::None => e,
        SrcMod::Neg => format!("(-{e})"),
        SrcMod::Bias => format!("({e} - 0.5)"),
        SrcMod::BiasNeg => format!("(0.5 - {e})"),
        SrcMod::Sign => format!("(2.0 * {e} - 1.0)"),
        SrcMod::SignNeg => format!("(1.0 - 2.0 * {e})"),
        SrcMod::Comp => format!("(1.0 - {e})"),
        SrcMod::X2 => format!("(2.0 * {e})"),
        SrcMod::X2Neg => format!("(-2.0 * {e})"),
        SrcMod::Abs => format!("abs({e})"),
        SrcMod::AbsNeg => format!("(-abs({e}))"),
        SrcMod::Dz | SrcMod::Dw => return Err(unsupported("_dz/_dw outside ps_1_4 texld")),
        SrcMod::Not => return Err(malformed("! on a non-boolean source")),
    })
}

impl<'a> Writer<'a> {
    fn new(shader: &'a Shader, key: &'a VariantKey) -> Self {
        Writer {
            shader,
            key,
            stage: shader.version.stage,
            sm1: shader.version.major < 2,
            regs: BTreeSet::new(),
            samplers: BTreeMap::new(),
            ps_inputs: BTreeMap::new(),
            vs_outputs: BTreeMap::new(),
            uses_vpos: false,
            uses_vface: false,
            needs_read_c: false,
            needs_read_v: false,
            functions: Vec::new(),
            labels: BTreeSet::new(),
            next_id: 0,
            size: 0,
        }
    }

    fn ps(&self) -> bool {
        self.stage == Stage::Pixel
    }

    // ---- declarations -------------------------------------------------------------

    fn collect_decls(&mut self) -> Result<(), TranslateError> {
        let v = self.shader.version;
        for decl in &self.shader.decls {
            match *decl {
                Decl::Sampler { number, kind } => {
                    if self.sm1 {
                        return Err(malformed("sampler DCL in shader model 1"));
                    }
                    if self.stage == Stage::Vertex && number >= 4 {
                        return Err(TranslateError::Register { ty: 10, number });
                    }
                    self.samplers.insert(number, kind);
                }
                Decl::Semantic { dst, usage, index } => match (self.stage, dst.reg.ty) {
                    (Stage::Vertex, RegType::Input) => {}
                    (Stage::Vertex, RegType::Output) if v.major >= 3 => {
                        let slot = match (usage, index) {
                            (Usage::Position, 0) => OutputSlot::Position,
                            _ => match varying_location(usage, index) {
                                Some(l) => OutputSlot::Varying(l),
                                None => OutputSlot::Dropped,
                            },
                        };
                        self.vs_outputs
                            .entry(reg_key(dst.reg))
                            .or_default()
                            .push((slot, full_mask(dst.mask)));
                    }
                    (Stage::Pixel, RegType::Input) if v.major >= 3 => {
                        let loc = varying_location(usage, index)
                            .ok_or(unsupported("ps_3_0 input semantic without a location"))?;
                        self.ps_inputs
                            .entry(reg_key(dst.reg))
                            .or_default()
                            .push((loc, full_mask(dst.mask)));
                    }
                    // ps_2_x `dcl v0`/`dcl t0`: the register decides the semantic.
                    (Stage::Pixel, RegType::Input | RegType::AddrOrTexture) => {}
                    (Stage::Pixel, RegType::Misc) if v.major >= 3 => {}
                    _ => return Err(malformed("DCL of this register")),
                },
            }
        }
        Ok(())
    }

    /// Notes a register the shader touches and checks it belongs in this stage.
    fn touch(&mut self, reg: Reg, write: bool) -> Result<(), TranslateError> {
        let v = self.shader.version;
        let ps = self.ps();
        let ok = match reg.ty {
            RegType::Temp | RegType::Const => true,
            RegType::Input => {
                if ps && v.major >= 3 {
                    self.ps_inputs.contains_key(&reg_key(reg))
                } else if ps {
                    reg.number < 2
                } else {
                    self.vertex_input_decl(reg.number).is_some()
                }
            }
            RegType::AddrOrTexture => {
                if ps {
                    v.major < 3
                } else {
                    v.major >= 2 || reg.number == 0
                }
            }
            RegType::RastOut | RegType::AttrOut => !ps && v.major < 3,
            RegType::Output => {
                !ps && (v.major < 3 && reg.number < 8
                    || self.vs_outputs.contains_key(&reg_key(reg)))
            }
            RegType::ColorOut => ps && (v.major >= 2),
            RegType::DepthOut => ps && v.major >= 2,
            RegType::ConstInt | RegType::ConstBool | RegType::Loop | RegType::Predicate => {
                v.major >= 2
            }
            RegType::Misc => ps && v.major >= 3,
            RegType::Sampler | RegType::Label => true,
        };
        if !ok {
            return Err(TranslateError::Register {
                ty: reg.ty as u32,
                number: reg.number,
            });
        }
        let read_only = matches!(
            reg.ty,
            RegType::Const
                | RegType::Input
                | RegType::ConstInt
                | RegType::ConstBool
                | RegType::Misc
                | RegType::Loop
                | RegType::Sampler
                | RegType::Label
        );
        if write && read_only {
            return Err(malformed("write to a read-only register"));
        }
        if !write
            && matches!(
                reg.ty,
                RegType::RastOut
                    | RegType::AttrOut
                    | RegType::Output
                    | RegType::ColorOut
                    | RegType::DepthOut
            )
        {
            return Err(malformed("read of an output register"));
        }
        if ps && reg.ty == RegType::Input && v.major < 3 {
            self.ps_inputs.insert(reg_key(reg), vec![(reg.number, 0xF)]);
        }
        if ps && reg.ty == RegType::AddrOrTexture {
            self.ps_inputs
                .insert(reg_key(reg), vec![(2 + reg.number, 0xF)]);
        }
        if reg.ty == RegType::Misc {
            if reg.number == 0 {
                self.uses_vpos = true;
            } else {
                self.uses_vface = true;
            }
        }
        if !ps && v.major < 3 && write {
            let slot = match reg.ty {
                RegType::RastOut if reg.number == 0 => Some(OutputSlot::Position),
                RegType::RastOut if reg.number == 1 => Some(OutputSlot::Varying(10)),
                RegType::RastOut => Some(OutputSlot::Dropped),
                RegType::AttrOut => Some(OutputSlot::Varying(reg.number)),
                RegType::Output => Some(OutputSlot::Varying(2 + reg.number)),
                _ => None,
            };
            if let Some(slot) = slot {
                self.vs_outputs.insert(reg_key(reg), vec![(slot, 0xF)]);
            }
        }
        self.regs.insert(reg_key(reg));
        Ok(())
    }

    fn vertex_input_decl(&self, number: u32) -> Option<(Usage, u8)> {
        self.shader.decls.iter().find_map(|d| match *d {
            Decl::Semantic { dst, usage, index }
                if dst.reg.ty == RegType::Input && dst.reg.number == number =>
            {
                Some((usage, index))
            }
            _ => None,
        })
    }

    fn collect_regs(&mut self) -> Result<(), TranslateError> {
        let shader = self.shader;
        for ins in &shader.instructions {
            if let Some(d) = &ins.dst {
                self.touch(d.reg, ins.op != Op::TexKill)?;
                if let Some(rel) = d.rel {
                    // vs_3_0 `o[aL + n]`: written through an if-chain over o#.
                    if d.reg.ty != RegType::Output || shader.version.major < 3 {
                        return Err(unsupported("relative addressing of this destination"));
                    }
                    self.touch(rel.reg, false)?;
                    for key in self.vs_outputs.keys().copied().collect::<Vec<_>>() {
                        self.regs.insert(key);
                    }
                }
            }
            for s in ins.srcs.iter().chain(ins.predicate.iter()) {
                self.touch(s.reg, false)?;
                if let Some(rel) = s.rel {
                    self.touch(rel.reg, false)?;
                    match s.reg.ty {
                        RegType::Const => self.needs_read_c = true,
                        RegType::Input if shader.version.major >= 3 => self.needs_read_v = true,
                        _ => return Err(unsupported("relative addressing of this register")),
                    }
                }
            }
            // The matrix rows after the named one.
            if let Some(rows) = matrix_rows(ins.op)
                && let Some(s) = ins.srcs.get(1)
            {
                for k in 1..rows {
                    let reg = Reg {
                        ty: s.reg.ty,
                        number: s.reg.number + k,
                    };
                    if reg.number >= super::parse::register_limit(reg.ty, shader.version) {
                        return Err(TranslateError::Register {
                            ty: reg.ty as u32,
                            number: reg.number,
                        });
                    }
                    self.touch(reg, false)?;
                }
            }
            if ins.op == Op::Loop {
                self.regs.insert(reg_key(Reg {
                    ty: RegType::Loop,
                    number: 0,
                }));
            }
            if ins.op == Op::Label
                && let Some(s) = ins.srcs.first()
                && (s.reg.ty != RegType::Label || !self.labels.insert(s.reg.number))
            {
                return Err(malformed("label operand or label defined twice"));
            }
        }
        if self.needs_read_v {
            for d in &shader.decls {
                if let Decl::Semantic { dst, .. } = d
                    && dst.reg.ty == RegType::Input
                {
                    self.touch(dst.reg, false)?;
                }
            }
        }
        // ps_1_x: the final colour is r0.
        if self.ps() && self.sm1 {
            self.touch(
                Reg {
                    ty: RegType::Temp,
                    number: 0,
                },
                true,
            )?;
        }
        Ok(())
    }

    // ---- expressions --------------------------------------------------------------

    fn defined_float(&self, n: u32) -> Option<[f32; 4]> {
        self.shader
            .defs
            .float
            .iter()
            .find(|d| d.0 == n)
            .map(|d| d.1)
    }

    fn rel_index(&self, rel: super::parse::RelAddr) -> String {
        match rel.reg.ty {
            RegType::Loop => "aL".to_string(),
            _ => format!("a0.{}", COMPONENTS[usize::from(rel.component & 3)]),
        }
    }

    /// The register as a vec4<f32>, before swizzle and modifier.
    fn base(&self, s: &Src) -> Result<String, TranslateError> {
        let n = s.reg.number;
        Ok(match s.reg.ty {
            RegType::Temp => format!("r{n}"),
            RegType::Input => match s.rel {
                Some(rel) => format!("read_v({} + {n})", self.rel_index(rel)),
                None => format!("v{n}"),
            },
            RegType::Const => {
                if let Some(rel) = s.rel {
                    format!("read_c({} + {n})", self.rel_index(rel))
                } else if let Some(v) = self.defined_float(n) {
                    let v = if self.sm1 && self.ps() {
                        // ps_1_x constants live in [-1, 1].
                        v.map(|x| x.clamp(-1.0, 1.0))
                    } else {
                        v
                    };
                    vec4_f(v)
                } else if self.sm1 && self.ps() {
                    format!("clamp(cf.c[{n}], vec4<f32>(-1.0), vec4<f32>(1.0))")
                } else {
                    format!("cf.c[{n}]")
                }
            }
            RegType::AddrOrTexture => {
                if self.ps() {
                    format!("t{n}")
                } else {
                    "vec4<f32>(a0)".into()
                }
            }
            RegType::ConstInt => format!("vec4<f32>({})", self.int_const(n)),
            RegType::Loop => "vec4<f32>(f32(aL))".into(),
            RegType::Misc => {
                if n == 0 {
                    "v_pos".into()
                } else {
                    "v_face".into()
                }
            }
            _ => return Err(malformed("register not readable as a float")),
        })
    }

    fn int_const(&self, n: u32) -> String {
        match self.shader.defs.int.iter().find(|d| d.0 == n) {
            Some((_, v)) => format!(
                "vec4<i32>({}, {}, {}, {})",
                int(v[0]),
                int(v[1]),
                int(v[2]),
                int(v[3])
            ),
            None => format!("cib.i[{n}]"),
        }
    }

    fn bool_const(&self, n: u32) -> String {
        match self.shader.defs.bool.iter().find(|d| d.0 == n) {
            Some((_, v)) => v.to_string(),
            None => format!("(cib.b[{}][{}] != 0u)", n / 4, n % 4),
        }
    }

    /// A source as a vec4<f32>.
    fn src(&self, s: &Src) -> Result<String, TranslateError> {
        let mut e = self.base(s)?;
        if s.swizzle != [0, 1, 2, 3] {
            e = format!("{e}.{}", swizzle_text(s.swizzle));
        }
        modify(e, s.modifier)
    }

    /// One component (after swizzle) of a source, as an f32.
    fn scalar(&self, s: &Src, slot: usize) -> Result<String, TranslateError> {
        let c = COMPONENTS[usize::from(s.swizzle[slot] & 3)];
        modify(format!("{}.{c}", self.base(s)?), s.modifier)
    }

    /// A boolean condition source: b#, or p0 with a component and an optional `!`.
    fn condition(&self, s: &Src) -> Result<String, TranslateError> {
        match s.reg.ty {
            RegType::ConstBool => Ok(match s.modifier {
                // callnz l#, !b#
                SrcMod::Not => format!("!{}", self.bool_const(s.reg.number)),
                SrcMod::None => self.bool_const(s.reg.number),
                _ => return Err(malformed("bool modifier")),
            }),
            RegType::Predicate => {
                let c = COMPONENTS[usize::from(s.swizzle[0] & 3)];
                Ok(match s.modifier {
                    SrcMod::Not => format!("!p0.{c}"),
                    SrcMod::None => format!("p0.{c}"),
                    _ => return Err(malformed("predicate modifier")),
                })
            }
            _ => Err(malformed("condition register")),
        }
    }

    fn predicate_vec(&self, p: &Src) -> Result<String, TranslateError> {
        let e = format!("p0.{}", swizzle_text(p.swizzle));
        Ok(match p.modifier {
            SrcMod::Not => format!("!{e}"),
            SrcMod::None => e,
            _ => return Err(malformed("predicate modifier")),
        })
    }

    fn sampler(&self, s: &Src) -> Result<(u32, TextureKind), TranslateError> {
        if s.reg.ty != RegType::Sampler {
            return Err(malformed("sampler operand"));
        }
        let kind = self
            .samplers
            .get(&s.reg.number)
            .copied()
            .ok_or(malformed("sampler without DCL"))?;
        Ok((s.reg.number, kind))
    }

    fn texture_names(&self, slot: u32) -> (String, String) {
        let prefix = if self.ps() { "" } else { "v" };
        (format!("{prefix}tex{slot}"), format!("{prefix}smp{slot}"))
    }

    // ---- statements ---------------------------------------------------------------

    /// Writes `value` (a vec4<f32> expression) to `dst`, honouring shift, saturate,
    /// write mask and the instruction's predicate.
    fn store(
        &self,
        out: &mut String,
        ins: &Instruction,
        value: String,
    ) -> Result<(), TranslateError> {
        let dst = ins.dst.as_ref().ok_or(malformed("no destination"))?;
        let mut value = value;
        if dst.shift != 0 {
            value = format!("({value} * {})", float(2f32.powi(i32::from(dst.shift))));
        }
        if dst.saturate {
            value = format!("clamp({value}, vec4<f32>(0.0), vec4<f32>(1.0))");
        }
        if dst.reg.ty == RegType::Predicate {
            return Err(malformed("p0 written by an instruction other than setp"));
        }
        let target = self.dst_name(dst)?;
        if dst.reg.ty == RegType::AddrOrTexture && !self.ps() {
            // a0: mova rounds to nearest; vs_1_1's mov to a0 floors.
            let rounded = if ins.op == Op::Mova {
                format!("floor({value} + 0.5)")
            } else {
                format!("floor({value})")
            };
            writeln!(out, "ti = vec4<i32>({rounded});").ok();
            return self.assign(out, ins, dst, &target, "ti");
        }
        writeln!(out, "tf = {value};").ok();
        if let Some(rel) = dst.rel {
            // o[aL + n]: one branch per declared output (others are not written).
            let index = format!("{} + {}", self.rel_index(rel), dst.reg.number);
            for &(ty, k) in self.vs_outputs.keys() {
                if ty != RegType::Output as u8 {
                    continue;
                }
                writeln!(out, "if ({index} == {k}) {{").ok();
                self.assign(out, ins, dst, &format!("o{k}"), "tf")?;
                out.push_str("}\n");
            }
            return Ok(());
        }
        self.assign(out, ins, dst, &target, "tf")
    }

    fn assign(
        &self,
        out: &mut String,
        ins: &Instruction,
        dst: &Dst,
        target: &str,
        tmp: &str,
    ) -> Result<(), TranslateError> {
        if let Some(p) = &ins.predicate {
            writeln!(out, "pr = {};", self.predicate_vec(p)?).ok();
        }
        let mask = if dst.mask == 0 { 0xF } else { dst.mask };
        if mask == 0xF && ins.predicate.is_none() {
            writeln!(out, "{target} = {tmp};").ok();
            return Ok(());
        }
        for (i, c) in COMPONENTS.iter().enumerate() {
            if mask & (1 << i) == 0 {
                continue;
            }
            if ins.predicate.is_some() {
                writeln!(
                    out,
                    "{target}.{c} = select({target}.{c}, {tmp}.{c}, pr.{c});"
                )
                .ok();
            } else {
                writeln!(out, "{target}.{c} = {tmp}.{c};").ok();
            }
        }
        Ok(())
    }

    fn dst_name(&self, dst: &Dst) -> Result<String, TranslateError> {
        let n = dst.reg.number;
        Ok(match dst.reg.ty {
            RegType::Temp => format!("r{n}"),
            RegType::AddrOrTexture => {
                if self.ps() {
                    format!("t{n}")
                } else {
                    "a0".into()
                }
            }
            RegType::RastOut => ["o_pos", "o_fog", "o_psize"][n as usize % 3].into(),
            RegType::AttrOut => format!("o_d{n}"),
            RegType::Output => {
                if self.shader.version.major >= 3 {
                    format!("o{n}")
                } else {
                    format!("o_t{n}")
                }
            }
            RegType::ColorOut => format!("oc{n}"),
            RegType::DepthOut => "o_depth".into(),
            RegType::Predicate => "p0".into(),
            _ => return Err(malformed("destination register")),
        })
    }

    fn srcs(&self, ins: &Instruction) -> Result<Vec<String>, TranslateError> {
        ins.srcs.iter().map(|s| self.src(s)).collect()
    }

    /// The value an arithmetic/texture instruction computes, as a vec4<f32>.
    fn value(&self, ins: &Instruction) -> Result<String, TranslateError> {
        let s = || self.srcs(ins);
        let sc = |i: usize, slot: usize| -> Result<String, TranslateError> {
            self.scalar(ins.srcs.get(i).ok_or(malformed("operand"))?, slot)
        };
        let splat = |e: String| format!("vec4<f32>({e})");
        Ok(match ins.op {
            Op::Mov | Op::Mova => s()?.remove(0),
            Op::Add => {
                let s = s()?;
                format!("({} + {})", s[0], s[1])
            }
            Op::Sub => {
                let s = s()?;
                format!("({} - {})", s[0], s[1])
            }
            Op::Mul => {
                let s = s()?;
                format!("({} * {})", s[0], s[1])
            }
            Op::Mad => {
                let s = s()?;
                format!("({} * {} + {})", s[0], s[1], s[2])
            }
            Op::Lrp => {
                let s = s()?;
                format!("({0} * ({1} - {2}) + {2})", s[0], s[1], s[2])
            }
            Op::Dp3 => {
                let s = s()?;
                splat(format!("dot(({}).xyz, ({}).xyz)", s[0], s[1]))
            }
            Op::Dp4 => {
                let s = s()?;
                splat(format!("dot({}, {})", s[0], s[1]))
            }
            Op::Dp2Add => {
                let s0 = s()?;
                splat(format!(
                    "dot(({}).xy, ({}).xy) + {}",
                    s0[0],
                    s0[1],
                    sc(2, 0)?
                ))
            }
            Op::Min => {
                let s = s()?;
                format!("min({}, {})", s[0], s[1])
            }
            Op::Max => {
                let s = s()?;
                format!("max({}, {})", s[0], s[1])
            }
            Op::Slt | Op::Sge => {
                let s = s()?;
                let op = if ins.op == Op::Slt { "<" } else { ">=" };
                format!(
                    "select(vec4<f32>(0.0), vec4<f32>(1.0), {} {op} {})",
                    s[0], s[1]
                )
            }
            Op::Cmp => {
                let s = s()?;
                format!("select({}, {}, {} >= vec4<f32>(0.0))", s[2], s[1], s[0])
            }
            Op::Cnd => {
                let s = s()?;
                format!("select({}, {}, {} > vec4<f32>(0.5))", s[2], s[1], s[0])
            }
            Op::Rcp => splat(format!("1.0 / {}", sc(0, 3)?)),
            Op::Rsq => splat(format!("inverseSqrt(abs({}))", sc(0, 3)?)),
            Op::Exp => splat(format!("exp2({})", sc(0, 3)?)),
            Op::Log => splat(format!("d3d_log({})", sc(0, 3)?)),
            Op::ExpP if self.sm1 => format!("d3d_expp({})", sc(0, 3)?),
            Op::ExpP => splat(format!("exp2({})", sc(0, 3)?)),
            Op::LogP if self.sm1 => format!("d3d_logp({})", sc(0, 3)?),
            Op::LogP => splat(format!("d3d_log({})", sc(0, 3)?)),
            Op::Pow => splat(format!("d3d_pow({}, {})", sc(0, 3)?, sc(1, 3)?)),
            Op::Frc => format!("fract({})", s()?.remove(0)),
            Op::Abs => format!("abs({})", s()?.remove(0)),
            Op::Sgn => format!("sign({})", s()?.remove(0)),
            Op::Nrm => format!("d3d_nrm({})", s()?.remove(0)),
            Op::Lit => format!("d3d_lit({})", s()?.remove(0)),
            Op::Dst => {
                let s = s()?;
                format!(
                    "vec4<f32>(1.0, ({0}).y * ({1}).y, ({0}).z, ({1}).w)",
                    s[0], s[1]
                )
            }
            Op::Crs => {
                let s = s()?;
                format!("vec4<f32>(cross(({}).xyz, ({}).xyz), 0.0)", s[0], s[1])
            }
            Op::SinCos => {
                let x = sc(0, 3)?;
                format!("vec4<f32>(cos({x}), sin({x}), 0.0, 0.0)")
            }
            Op::M4x4 | Op::M4x3 | Op::M3x4 | Op::M3x3 | Op::M3x2 => {
                let (rows, dot4) = match ins.op {
                    Op::M4x4 => (4, true),
                    Op::M4x3 => (3, true),
                    Op::M3x4 => (4, false),
                    Op::M3x3 => (3, false),
                    _ => (2, false),
                };
                let v = self.src(&ins.srcs[0])?;
                let mut parts = Vec::new();
                for k in 0..4 {
                    if k >= rows {
                        parts.push("0.0".to_string());
                        continue;
                    }
                    let mut row = ins.srcs[1];
                    row.reg.number += k;
                    let r = self.src(&row)?;
                    parts.push(if dot4 {
                        format!("dot({v}, {r})")
                    } else {
                        format!("dot(({v}).xyz, ({r}).xyz)")
                    });
                }
                format!("vec4<f32>({})", parts.join(", "))
            }
            Op::Dsx => format!("dpdx({})", s()?.remove(0)),
            Op::Dsy => format!("dpdy({})", s()?.remove(0)),
            Op::Tex if !self.sm1 => self.texld(ins)?,
            Op::TexLdl | Op::TexLdd => self.texld(ins)?,
            _ => return Err(unsupported("instruction")),
        })
    }

    /// texld (with texldp/texldb flavours), texldl and texldd.
    fn texld(&self, ins: &Instruction) -> Result<String, TranslateError> {
        let sampler_src = ins.srcs.get(1).ok_or(malformed("operand"))?;
        let (slot, kind) = self.sampler(sampler_src)?;
        let coord = self.src(&ins.srcs[0])?;
        let (tex, smp) = self.texture_names(slot);
        let comps = if kind == TextureKind::Tex2d {
            "xy"
        } else {
            "xyz"
        };
        let projected = ins.op == Op::Tex && ins.control & 1 != 0;
        let biased = ins.op == Op::Tex && ins.control & 2 != 0;
        let c = if projected {
            format!("(({coord}).{comps} / ({coord}).w)")
        } else {
            format!("({coord}).{comps}")
        };
        let mut e = match ins.op {
            Op::TexLdl => format!("textureSampleLevel({tex}, {smp}, {c}, ({coord}).w)"),
            Op::TexLdd => {
                let dx = self.src(ins.srcs.get(2).ok_or(malformed("operand"))?)?;
                let dy = self.src(ins.srcs.get(3).ok_or(malformed("operand"))?)?;
                // The sampler's bias on explicit gradients: LOD + b = log2(2^b * |grad|).
                let scale = match self.sampler_lod_bias(slot) {
                    Some(b) => format!(" * {:?}", b.exp2()),
                    None => String::new(),
                };
                format!(
                    "textureSampleGrad({tex}, {smp}, {c}, ({dx}).{comps}{scale}, ({dy}).{comps}{scale})"
                )
            }
            _ if biased => match self.sampler_lod_bias(slot) {
                Some(b) => format!(
                    "textureSampleBias({tex}, {smp}, {c}, clamp(({coord}).w + {b:?}, -16.0, 15.99))"
                ),
                None => format!("textureSampleBias({tex}, {smp}, {c}, ({coord}).w)"),
            },
            _ => self.implicit_sample(slot, &c),
        };
        e = self.texture_read(slot, e);
        if self.stage == Stage::Vertex && ins.op != Op::TexLdl {
            return Err(malformed("implicit-LOD sampling in a vertex shader"));
        }
        if sampler_src.swizzle != [0, 1, 2, 3] {
            e = format!("{e}.{}", swizzle_text(sampler_src.swizzle));
        }
        Ok(e)
    }

    /// Shader model 1 texture instructions (the ones with a meaning in WGSL).
    fn sm1_texture(&mut self, out: &mut String, ins: &Instruction) -> Result<(), TranslateError> {
        let dst = ins.dst.ok_or(malformed("no destination"))?;
        let ps14 = self.shader.version.minor == 4;
        let n = dst.reg.number;
        // The interpolated coordinate of a t# destination (ps_1_1–1_3 address ops).
        let tc = |k: u32| format!("tc{k}");
        let first = ins.srcs.first().map(|s| self.src(s));
        let src0 = || first.clone().unwrap_or(Err(malformed("operand")));
        let value = match (ins.op, ps14) {
            (Op::Tex, false) => self.sm1_sample(n, &tc(n))?,
            (Op::Tex, true) => {
                // texld rN, src: sampler N at src (with _dz/_dw projection).
                let coord = self.sm1_coord(&ins.srcs[0])?;
                self.sm1_sample(n, &coord)?
            }
            (Op::TexCoord, false) => format!(
                "vec4<f32>(clamp({}.xyz, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0)",
                tc(n)
            ),
            (Op::TexCoord, true) => {
                let c = self.sm1_coord(&ins.srcs[0])?;
                format!("vec4<f32>(({c}).xyz, 1.0)")
            }
            (Op::TexReg2Ar, _) => {
                let s = src0()?;
                self.sm1_sample(n, &format!("vec4<f32>(({s}).w, ({s}).x, 0.0, 0.0)"))?
            }
            (Op::TexReg2Gb, _) => {
                let s = src0()?;
                self.sm1_sample(n, &format!("vec4<f32>(({s}).y, ({s}).z, 0.0, 0.0)"))?
            }
            (Op::TexReg2Rgb, _) => self.sm1_sample(n, &src0()?)?,
            (Op::TexDp3, _) | (Op::TexM3x2Pad, _) | (Op::TexM3x3Pad, _) => {
                // The pads keep their row's dot product in .x for the final row.
                format!("vec4<f32>(dot({}.xyz, ({}).xyz))", tc(n), src0()?)
            }
            (Op::TexDp3Tex, _) => {
                let u = format!("dot({}.xyz, ({}).xyz)", tc(n), src0()?);
                self.sm1_sample(n, &format!("vec4<f32>({u}, 0.0, 0.0, 0.0)"))?
            }
            (Op::TexM3x2Tex | Op::TexM3x2Depth, _) => {
                let pad = self.pad_row(n, 1)?;
                let last = format!("dot({}.xyz, ({}).xyz)", tc(n), src0()?);
                if ins.op == Op::TexM3x2Depth {
                    // Depth = z / w of the two dot products (1 where w is 0).
                    writeln!(
                        out,
                        "tf = vec4<f32>({pad}.x, {last}, 0.0, 0.0);\no_depth = vec4<f32>(select(tf.x / tf.y, 1.0, tf.y == 0.0));"
                    )
                    .ok();
                    "tf".into()
                } else {
                    let c = format!("vec4<f32>({pad}.x, {last}, 0.0, 0.0)");
                    self.sm1_sample(n, &c)?
                }
            }
            (Op::TexM3x3 | Op::TexM3x3Tex | Op::TexM3x3Spec | Op::TexM3x3VSpec, _) => {
                let (r0, r1) = (self.pad_row(n, 2)?, self.pad_row(n, 1)?);
                let normal = format!(
                    "vec3<f32>({r0}.x, {r1}.x, dot({}.xyz, ({}).xyz))",
                    tc(n),
                    src0()?
                );
                match ins.op {
                    Op::TexM3x3 => format!("vec4<f32>({normal}, 1.0)"),
                    Op::TexM3x3Tex => self.sm1_sample(n, &format!("vec4<f32>({normal}, 0.0)"))?,
                    _ => {
                        let eye = if ins.op == Op::TexM3x3Spec {
                            format!(
                                "({}).xyz",
                                self.src(ins.srcs.get(1).ok_or(malformed("operand"))?)?
                            )
                        } else {
                            format!("vec3<f32>({}.w, {}.w, {}.w)", tc(n - 2), tc(n - 1), tc(n))
                        };
                        writeln!(out, "tf = vec4<f32>(d3d_reflect({normal}, {eye}), 0.0);").ok();
                        self.sm1_sample(n, "tf")?
                    }
                }
            }
            (Op::TexBem | Op::TexBemL, false) => {
                let s = src0()?;
                let c = format!(
                    "vec4<f32>({0}.xy + bump.m[{1}].xy * ({2}).x + bump.m[{1}].zw * ({2}).y, 0.0, 0.0)",
                    tc(n),
                    n,
                    s
                );
                let sample = self.sm1_sample(n, &c)?;
                if ins.op == Op::TexBemL {
                    // D3D9's rule scales rgb by (z * LSCALE + LOFFSET) unclamped (Wine's
                    // d3d9 too: LSCALE 1.5 brightens).
                    format!(
                        "({sample} * vec4<f32>(vec3<f32>(({s}).z * bump.l[{n}].x + bump.l[{n}].y), 1.0))"
                    )
                } else {
                    sample
                }
            }
            (Op::Bem, true) => {
                let a = src0()?;
                let b = self.src(ins.srcs.get(1).ok_or(malformed("operand"))?)?;
                if n >= 8 {
                    return Err(malformed("bem destination"));
                }
                format!(
                    "vec4<f32>(({a}).xy + bump.m[{n}].xy * ({b}).x + bump.m[{n}].zw * ({b}).y, 0.0, 0.0)"
                )
            }
            (Op::TexDepth, true) => {
                if dst.reg.ty != RegType::Temp || n != 5 {
                    return Err(malformed("texdepth takes r5"));
                }
                writeln!(
                    out,
                    "o_depth = vec4<f32>(select(r5.x / r5.y, 1.0, r5.y == 0.0));"
                )
                .ok();
                return Ok(());
            }
            _ => return Err(unsupported("ps_1_x texture-address instruction")),
        };
        self.store(out, ins, value)
    }

    /// The t# a texm3x2/texm3x3 pad wrote `back` rows before `n`.
    fn pad_row(&self, n: u32, back: u32) -> Result<String, TranslateError> {
        let row = n
            .checked_sub(back)
            .ok_or(malformed("texm without its pad rows"))?;
        if !self.regs.contains(&(RegType::AddrOrTexture as u8, row)) {
            return Err(malformed("texm without its pad rows"));
        }
        Ok(format!("t{row}"))
    }

    fn sm1_coord(&self, s: &Src) -> Result<String, TranslateError> {
        let mut plain = *s;
        plain.modifier = SrcMod::None;
        let e = self.src(&plain)?;
        Ok(match s.modifier {
            SrcMod::None => e,
            SrcMod::Dz => format!("vec4<f32>(({e}).xy / ({e}).z, ({e}).zw)"),
            SrcMod::Dw => format!("vec4<f32>(({e}).xy / ({e}).w, ({e}).zw)"),
            _ => return Err(malformed("texture coordinate modifier")),
        })
    }

    fn sm1_sample(&mut self, slot: u32, coord: &str) -> Result<String, TranslateError> {
        let kind =
            *self
                .key
                .ps1_sampler_kinds
                .get(slot as usize)
                .ok_or(TranslateError::Register {
                    ty: 10,
                    number: slot,
                })?;
        self.samplers.insert(slot, kind);
        let comps = if kind == TextureKind::Tex2d {
            "xy"
        } else {
            "xyz"
        };
        let e = self.implicit_sample(slot, &format!("({coord}).{comps}"));
        Ok(self.texture_read(slot, e))
    }

    /// A colour output `e` as D3DRS_SRGBWRITEENABLE stores it.
    fn srgb_write(&self, e: &str) -> String {
        if self.key.srgb_write {
            format!("d3d_srgb_encode({e})")
        } else {
            e.to_string()
        }
    }

    /// A sample `e` of pixel sampler `slot` as its format reads ([`VariantKey::ps_texture_reads`]).
    fn texture_read(&self, slot: u32, e: String) -> String {
        let read = if self.ps() {
            self.key.ps_texture_reads.get(slot as usize).copied()
        } else {
            None
        };
        let e = match read.unwrap_or_default() {
            TextureRead::Rgba => e,
            TextureRead::OneAlpha => format!("vec4<f32>(({e}).rgb, 1.0)"),
            TextureRead::Luminance => format!("vec4<f32>(({e}).rrr, 1.0)"),
            TextureRead::Alpha => format!("vec4<f32>(0.0, 0.0, 0.0, ({e}).r)"),
            TextureRead::LuminanceAlpha => format!("({e}).rrrg"),
            TextureRead::SignedUv => format!("vec4<f32>(({e}).rg, 1.0, 1.0)"),
        };
        let srgb = self.ps() && slot < 16 && self.key.ps_srgb_read & (1 << slot) != 0;
        if srgb {
            format!("d3d_srgb_decode({e})")
        } else {
            e
        }
    }

    /// An implicit-LOD sample of pixel sampler `slot` at `coords`, with the sampler's
    /// D3DSAMP_MIPMAPLODBIAS ([`VariantKey::ps_lod_bias`]) when it has one.
    fn implicit_sample(&self, slot: u32, coords: &str) -> String {
        let (tex, smp) = self.texture_names(slot);
        match self.sampler_lod_bias(slot) {
            Some(b) => format!("textureSampleBias({tex}, {smp}, {coords}, {b:?})"),
            None => format!("textureSample({tex}, {smp}, {coords})"),
        }
    }

    /// The LOD bias of pixel sampler `slot`: None when zero, non-finite or not a pixel
    /// shader; clamped to WGSL's bias range.
    fn sampler_lod_bias(&self, slot: u32) -> Option<f32> {
        if !self.ps() {
            return None;
        }
        let bias = f32::from_bits(*self.key.ps_lod_bias.get(slot as usize)?);
        (bias.is_finite() && bias != 0.0).then(|| bias.clamp(-16.0, 15.99))
    }

    // ---- functions and flow control -----------------------------------------------

    fn instructions(&mut self) -> Result<(), TranslateError> {
        let shader = self.shader;
        let mut current = Some(Function {
            name: "shader_main".into(),
            body: String::new(),
            calls: BTreeSet::new(),
        });
        let mut blocks: Vec<Block> = Vec::new();
        for ins in &shader.instructions {
            if ins.op == Op::Label {
                if !blocks.is_empty() {
                    return Err(malformed("label inside a block"));
                }
                if let Some(f) = current.take() {
                    self.functions.push(f);
                }
                current = Some(Function {
                    name: format!("label{}", ins.srcs[0].reg.number),
                    body: String::new(),
                    calls: BTreeSet::new(),
                });
                continue;
            }
            let Some(func) = current.as_mut() else {
                return Err(malformed("code after ret"));
            };
            let mut out = String::new();
            let depth = blocks.len();
            // Only value-writing instructions and texkill honour a predicate here.
            if ins.predicate.is_some() && ins.dst.is_none() {
                return Err(unsupported("predicated flow-control instruction"));
            }
            match ins.op {
                Op::Ret if depth == 0 => {
                    if let Some(f) = current.take() {
                        self.functions.push(f);
                    }
                    continue;
                }
                Op::Ret => out.push_str("return;\n"),
                Op::Nop | Op::Phase => {}
                Op::If => {
                    let c = self.condition(&ins.srcs[0])?;
                    writeln!(out, "if ({c}) {{").ok();
                    blocks.push(Block::If { has_else: false });
                }
                Op::Ifc => {
                    let op = compare_op(ins.compare()?);
                    let (a, b) = (self.scalar(&ins.srcs[0], 0)?, self.scalar(&ins.srcs[1], 0)?);
                    writeln!(out, "if ({a} {op} {b}) {{").ok();
                    blocks.push(Block::If { has_else: false });
                }
                Op::Else => match blocks.last_mut() {
                    Some(Block::If { has_else }) if !*has_else => {
                        *has_else = true;
                        out.push_str("} else {\n");
                    }
                    _ => return Err(malformed("else without if")),
                },
                Op::EndIf => match blocks.pop() {
                    Some(Block::If { .. }) => out.push_str("}\n"),
                    _ => return Err(malformed("endif without if")),
                },
                Op::Rep => {
                    let id = self.id();
                    let s = &ins.srcs[0];
                    if s.reg.ty != RegType::ConstInt {
                        return Err(malformed("rep count register"));
                    }
                    let i = self.int_const(s.reg.number);
                    writeln!(
                        out,
                        "{{\nvar count{id} = clamp(({i}).x, 0, {MAX_LOOP_COUNT});\nloop {{\nif (count{id} <= 0) {{ break; }}\ncount{id} -= 1;"
                    )
                    .ok();
                    blocks.push(Block::Rep);
                }
                Op::EndRep => match blocks.pop() {
                    Some(Block::Rep) => out.push_str("}\n}\n"),
                    _ => return Err(malformed("endrep without rep")),
                },
                Op::Loop => {
                    let id = self.id();
                    let (l, s) = (&ins.srcs[0], &ins.srcs[1]);
                    if l.reg.ty != RegType::Loop || s.reg.ty != RegType::ConstInt {
                        return Err(malformed("loop operands"));
                    }
                    let i = self.int_const(s.reg.number);
                    writeln!(
                        out,
                        "{{\nlet saved_al{id} = aL;\nlet li{id} = {i};\naL = li{id}.y;\nvar count{id} = clamp(li{id}.x, 0, {MAX_LOOP_COUNT});\nloop {{\nif (count{id} <= 0) {{ break; }}\ncount{id} -= 1;"
                    )
                    .ok();
                    blocks.push(Block::Loop { id });
                }
                Op::EndLoop => match blocks.pop() {
                    Some(Block::Loop { id }) => {
                        writeln!(out, "aL += li{id}.z;\n}}\naL = saved_al{id};\n}}").ok();
                    }
                    _ => return Err(malformed("endloop without loop")),
                },
                Op::Break | Op::BreakC | Op::BreakP => {
                    if !blocks
                        .iter()
                        .any(|b| matches!(b, Block::Loop { .. } | Block::Rep))
                    {
                        return Err(malformed("break outside a loop"));
                    }
                    match ins.op {
                        Op::Break => out.push_str("break;\n"),
                        Op::BreakP => {
                            let c = self.condition(&ins.srcs[0])?;
                            writeln!(out, "if ({c}) {{ break; }}").ok();
                        }
                        _ => {
                            let op = compare_op(ins.compare()?);
                            let (a, b) =
                                (self.scalar(&ins.srcs[0], 0)?, self.scalar(&ins.srcs[1], 0)?);
                            writeln!(out, "if ({a} {op} {b}) {{ break; }}").ok();
                        }
                    }
                }
                Op::Call | Op::CallNz => {
                    let l = &ins.srcs[0];
                    if l.reg.ty != RegType::Label {
                        return Err(malformed("call target"));
                    }
                    if !self.labels.contains(&l.reg.number) {
                        return Err(malformed("call of an undefined label"));
                    }
                    func.calls.insert(l.reg.number);
                    if ins.op == Op::Call {
                        writeln!(out, "label{}();", l.reg.number).ok();
                    } else {
                        let c = self.condition(&ins.srcs[1])?;
                        writeln!(out, "if ({c}) {{ label{}(); }}", l.reg.number).ok();
                    }
                }
                Op::TexKill => {
                    let dst = ins.dst.as_ref().ok_or(malformed("no destination"))?;
                    let reg = Src {
                        reg: dst.reg,
                        swizzle: [0, 1, 2, 3],
                        modifier: SrcMod::None,
                        rel: None,
                    };
                    // Shader model 1 tests a t# register's texture coordinate.
                    let e = if self.sm1 && dst.reg.ty == RegType::AddrOrTexture {
                        format!("tc{}", dst.reg.number)
                    } else {
                        self.base(&reg)?
                    };
                    let mask = if self.sm1 || dst.mask == 0 {
                        0x7
                    } else {
                        dst.mask
                    };
                    let tests: Vec<String> = (0..4)
                        .filter(|i| mask & (1 << i) != 0)
                        .map(|i| {
                            let c = COMPONENTS[i];
                            if ins.predicate.is_some() {
                                format!("({e}.{c} < 0.0 && pr.{c})")
                            } else {
                                format!("{e}.{c} < 0.0")
                            }
                        })
                        .collect();
                    if let Some(p) = &ins.predicate {
                        writeln!(out, "pr = {};", self.predicate_vec(p)?).ok();
                    }
                    writeln!(out, "if ({}) {{ discard; }}", tests.join(" || ")).ok();
                }
                Op::Setp => {
                    let op = compare_op(ins.compare()?);
                    let s = self.srcs(ins)?;
                    writeln!(out, "tb = {} {op} {};", s[0], s[1]).ok();
                    let dst = ins.dst.as_ref().ok_or(malformed("no destination"))?;
                    if dst.reg.ty != RegType::Predicate {
                        return Err(malformed("setp destination"));
                    }
                    self.assign(&mut out, ins, dst, "p0", "tb")?;
                }
                Op::Tex
                | Op::TexCoord
                | Op::TexBem
                | Op::TexBemL
                | Op::TexReg2Ar
                | Op::TexReg2Gb
                | Op::TexReg2Rgb
                | Op::TexM3x2Pad
                | Op::TexM3x2Tex
                | Op::TexM3x3Pad
                | Op::TexM3x3Tex
                | Op::TexM3x3Spec
                | Op::TexM3x3VSpec
                | Op::TexDp3Tex
                | Op::TexM3x2Depth
                | Op::TexDp3
                | Op::TexM3x3
                | Op::TexDepth
                | Op::Bem
                    if self.sm1 =>
                {
                    self.sm1_texture(&mut out, ins)?
                }
                _ => {
                    let value = self.value(ins)?;
                    self.store(&mut out, ins, value)?;
                }
            }
            if blocks.len() > MAX_NESTING {
                return Err(TranslateError::TooLarge("flow-control nesting"));
            }
            self.size += out.len();
            if self.size > MAX_WGSL_BYTES {
                return Err(TranslateError::TooLarge("WGSL output"));
            }
            // The function may have been replaced by a label above; `current` is it.
            if let Some(f) = current.as_mut() {
                f.body.push_str(&out);
            }
        }
        if !blocks.is_empty() {
            return Err(malformed("unterminated block"));
        }
        if let Some(f) = current.take() {
            self.functions.push(f);
        }
        self.check_calls()
    }

    fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    /// WGSL has no recursion; neither has D3D9, but a hostile stream may try.
    fn check_calls(&self) -> Result<(), TranslateError> {
        let name_of = |l: u32| format!("label{l}");
        let index: BTreeMap<String, usize> = self
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        let mut indegree_free: Vec<usize> = Vec::new();
        let mut remaining: Vec<usize> = self.functions.iter().map(|f| f.calls.len()).collect();
        // Kahn's algorithm on "calls": a function is done once everything it calls is.
        let callers: Vec<Vec<usize>> = {
            let mut c = vec![Vec::new(); self.functions.len()];
            for (i, f) in self.functions.iter().enumerate() {
                for &l in &f.calls {
                    let callee = *index
                        .get(&name_of(l))
                        .ok_or(malformed("call of a label without code"))?;
                    c[callee].push(i);
                }
            }
            c
        };
        for (i, r) in remaining.iter().enumerate() {
            if *r == 0 {
                indegree_free.push(i);
            }
        }
        let mut done = 0;
        while let Some(i) = indegree_free.pop() {
            done += 1;
            for &caller in &callers[i] {
                remaining[caller] -= 1;
                if remaining[caller] == 0 {
                    indegree_free.push(caller);
                }
            }
        }
        if done != self.functions.len() {
            return Err(malformed("recursive call"));
        }
        Ok(())
    }

    // ---- the module ---------------------------------------------------------------

    fn module(&self) -> Result<(String, Translated), TranslateError> {
        let v = self.shader.version;
        let ps = self.ps();
        let mut m = String::new();
        if ps {
            m.push_str("diagnostic(off, derivative_uniformity);\n");
        }
        m.push_str(
            "struct FloatConstants { c: array<vec4<f32>, 256> }\n\
             struct IntBoolConstants { i: array<vec4<i32>, 16>, b: array<vec4<u32>, 4> }\n",
        );
        let (fb, ib) = if ps {
            (bindings::PS_FLOAT, bindings::PS_INT_BOOL)
        } else {
            (bindings::VS_FLOAT, bindings::VS_INT_BOOL)
        };
        writeln!(
            m,
            "@group(0) @binding({fb}) var<uniform> cf: FloatConstants;"
        )
        .ok();
        writeln!(
            m,
            "@group(0) @binding({ib}) var<uniform> cib: IntBoolConstants;"
        )
        .ok();
        if !ps {
            writeln!(
                m,
                "@group(0) @binding({}) var<uniform> fixup: vec4<f32>;",
                bindings::VS_FIXUP
            )
            .ok();
        }
        // ps_1_x texbem/texbeml/bem read the bump-environment uniform.
        let uses_bump_env = self
            .shader
            .instructions
            .iter()
            .any(|i| matches!(i.op, Op::TexBem | Op::TexBemL | Op::Bem));
        if uses_bump_env {
            writeln!(
                m,
                "struct BumpEnv {{ m: array<vec4<f32>, 8>, l: array<vec4<f32>, 8> }}\n@group(0) @binding({}) var<uniform> bump: BumpEnv;",
                bindings::PS_BUMP_ENV
            )
            .ok();
        }
        let mut samplers = Vec::new();
        for (&slot, &kind) in &self.samplers {
            let ty = match kind {
                TextureKind::Tex2d => "texture_2d<f32>",
                TextureKind::Cube => "texture_cube<f32>",
                TextureKind::Volume => "texture_3d<f32>",
            };
            let binding = if ps {
                bindings::ps_texture(slot)
            } else {
                bindings::vs_texture(slot)
            };
            let (tex, smp) = self.texture_names(slot);
            writeln!(m, "@group(1) @binding({binding}) var {tex}: {ty};").ok();
            writeln!(m, "@group(1) @binding({}) var {smp}: sampler;", binding + 1).ok();
            samplers.push(SamplerUse { slot, kind });
        }
        // Registers.
        for &(ty, n) in &self.regs {
            let decl = match ty {
                t if t == RegType::Temp as u8 => format!("r{n}: vec4<f32>"),
                t if t == RegType::Input as u8 => format!("v{n}: vec4<f32>"),
                t if t == RegType::AddrOrTexture as u8 => {
                    if ps && self.sm1 {
                        // t# and the coordinate it was interpolated with.
                        format!("t{n}: vec4<f32>;\nvar<private> tc{n}: vec4<f32>")
                    } else if ps {
                        format!("t{n}: vec4<f32>")
                    } else {
                        "a0: vec4<i32>".into()
                    }
                }
                t if t == RegType::RastOut as u8 => {
                    format!(
                        "{}: vec4<f32>",
                        ["o_pos", "o_fog", "o_psize"][n as usize % 3]
                    )
                }
                t if t == RegType::AttrOut as u8 => format!("o_d{n}: vec4<f32>"),
                t if t == RegType::Output as u8 => {
                    if v.major >= 3 {
                        format!("o{n}: vec4<f32>")
                    } else {
                        format!("o_t{n}: vec4<f32>")
                    }
                }
                t if t == RegType::ColorOut as u8 => format!("oc{n}: vec4<f32>"),
                t if t == RegType::DepthOut as u8 => "o_depth: vec4<f32>".into(),
                t if t == RegType::Loop as u8 => "aL: i32".into(),
                t if t == RegType::Predicate as u8 => "p0: vec4<bool>".into(),
                _ => continue,
            };
            writeln!(m, "var<private> {decl};").ok();
        }
        if self.uses_vpos {
            m.push_str("var<private> v_pos: vec4<f32>;\n");
        }
        if self.sm1_writes_depth() {
            m.push_str("var<private> o_depth: vec4<f32>;\n");
        }
        if self.uses_vface {
            m.push_str("var<private> v_face: vec4<f32>;\n");
        }
        m.push_str(HELPERS);
        if self.needs_read_v {
            m.push_str("fn read_v(i: i32) -> vec4<f32> {\n");
            for &(ty, n) in &self.regs {
                if ty == RegType::Input as u8 {
                    writeln!(m, "if (i == {n}) {{ return v{n}; }}").ok();
                }
            }
            m.push_str("return vec4<f32>(0.0);\n}\n");
        }
        if self.needs_read_c {
            m.push_str("fn read_c(i: i32) -> vec4<f32> {\n");
            for (n, val) in &self.shader.defs.float {
                writeln!(m, "if (i == {n}) {{ return {}; }}", vec4_f(*val)).ok();
            }
            m.push_str("if (i < 0 || i >= 256) { return vec4<f32>(0.0); }\nreturn cf.c[i];\n}\n");
        }
        for f in &self.functions {
            writeln!(
                m,
                "fn {}() {{\nvar tf: vec4<f32>;\nvar ti: vec4<i32>;\nvar tb: vec4<bool>;\nvar pr: vec4<bool>;\n{}}}",
                f.name, f.body
            )
            .ok();
        }
        let mut t = Translated {
            version: v,
            wgsl: String::new(),
            vertex_inputs: Vec::new(),
            varyings: 0,
            samplers,
            color_outputs: 0,
            writes_depth: false,
        };
        if ps {
            self.fragment_entry(&mut m, &mut t)?;
        } else {
            self.vertex_entry(&mut m, &mut t)?;
        }
        if m.len() > MAX_WGSL_BYTES {
            return Err(TranslateError::TooLarge("WGSL output"));
        }
        Ok((m, t))
    }

    fn vertex_entry(&self, m: &mut String, t: &mut Translated) -> Result<(), TranslateError> {
        let mut params = Vec::new();
        let mut copies = String::new();
        for &(ty, n) in &self.regs {
            if ty != RegType::Input as u8 {
                continue;
            }
            let (usage, index) = self
                .vertex_input_decl(n)
                .ok_or(malformed("vertex input without DCL"))?;
            let bit = 1u32.checked_shl(n).unwrap_or(0);
            let ty = if u32::from(self.key.vs_uint_inputs) & bit != 0 {
                "vec4<u32>"
            } else if u32::from(self.key.vs_sint_inputs) & bit != 0 {
                "vec4<i32>"
            } else {
                "vec4<f32>"
            };
            params.push(format!("@location({n}) in_v{n}: {ty}"));
            writeln!(copies, "v{n} = vec4<f32>(in_v{n});").ok();
            t.vertex_inputs.push(VertexInput {
                location: n,
                usage,
                usage_index: index,
            });
        }
        // Location → (register expression, components it supplies).
        let mut written: BTreeMap<u32, Vec<(String, u8)>> = BTreeMap::new();
        let mut position = None;
        let sm3 = self.shader.version.major >= 3;
        for (&(ty, n), slots) in &self.vs_outputs {
            let name = self.dst_name(&Dst {
                reg: Reg {
                    ty: match ty {
                        x if x == RegType::RastOut as u8 => RegType::RastOut,
                        x if x == RegType::AttrOut as u8 => RegType::AttrOut,
                        _ => RegType::Output,
                    },
                    number: n,
                },
                mask: 0xF,
                saturate: false,
                centroid: false,
                shift: 0,
                rel: None,
            })?;
            for &(slot, mask) in slots {
                match slot {
                    OutputSlot::Position => position = Some(name.clone()),
                    OutputSlot::Varying(loc) => {
                        // D3D9 clamps vs_1/2 colour outputs to [0, 1].
                        let e = if !sm3 && ty == RegType::AttrOut as u8 {
                            format!("clamp({name}, vec4<f32>(0.0), vec4<f32>(1.0))")
                        } else {
                            name.clone()
                        };
                        written.entry(loc).or_default().push((e, mask));
                    }
                    OutputSlot::Dropped => {}
                }
            }
        }
        let position = position.ok_or(malformed("vertex shader without a position output"))?;
        let locations = self
            .key
            .vs_outputs
            .unwrap_or_else(|| written.keys().fold(0u16, |m, l| m | 1 << l));
        m.push_str("struct VsOut {\n@builtin(position) position: vec4<f32>,\n");
        for l in 0..16 {
            if locations & (1 << l) != 0 {
                writeln!(m, "@location({l}) l{l}: vec4<f32>,").ok();
            }
        }
        m.push_str("}\n");
        writeln!(
            m,
            "@vertex\nfn vs_main({}) -> VsOut {{\n{copies}shader_main();\nvar out: VsOut;\nvar p = {position};\np.x += fixup.x * p.w;\np.y += fixup.y * p.w;\nout.position = p;",
            params.join(", ")
        )
        .ok();
        for l in 0..16u32 {
            if locations & (1 << l) != 0 {
                let e = match written.get(&l).map(Vec::as_slice) {
                    None | Some([]) => "vec4<f32>(0.0)".to_string(),
                    Some([(e, 0xF)]) => e.clone(),
                    // Packed: each component from the register that declared it.
                    Some(parts) => {
                        let comps: Vec<String> = (0..4)
                            .map(|c| {
                                parts
                                    .iter()
                                    .find(|(_, mask)| mask & (1 << c) != 0)
                                    .map(|(e, _)| format!("{e}.{}", COMPONENTS[c]))
                                    .unwrap_or_else(|| "0.0".into())
                            })
                            .collect();
                        format!("vec4<f32>({})", comps.join(", "))
                    }
                };
                writeln!(m, "out.l{l} = {e};").ok();
            }
        }
        m.push_str("return out;\n}\n");
        t.varyings = locations;
        Ok(())
    }

    fn fragment_entry(&self, m: &mut String, t: &mut Translated) -> Result<(), TranslateError> {
        let mut params = vec!["@builtin(position) frag_pos: vec4<f32>".to_string()];
        if self.uses_vface {
            params.push("@builtin(front_facing) front: bool".into());
        }
        let mut copies = String::new();
        let mut locations = BTreeSet::new();
        for (&(ty, n), parts) in &self.ps_inputs {
            // Declared but never read: not an input (the vertex shader need not write it).
            if !self.regs.contains(&(ty, n)) {
                continue;
            }
            let name = if ty == RegType::Input as u8 {
                format!("v{n}")
            } else {
                format!("t{n}")
            };
            for &(loc, mask) in parts {
                if !locations.insert(loc) {
                    return Err(malformed("two inputs of one semantic"));
                }
                params.push(format!("@location({loc}) in_{loc}: vec4<f32>"));
                if mask == 0xF {
                    writeln!(copies, "{name} = in_{loc};").ok();
                } else {
                    for (c, comp) in COMPONENTS.iter().enumerate() {
                        if mask & (1 << c) != 0 {
                            writeln!(copies, "{name}.{comp} = in_{loc}.{comp};").ok();
                        }
                    }
                }
                t.varyings |= 1 << loc;
            }
            if self.sm1 && ty == RegType::AddrOrTexture as u8 {
                writeln!(copies, "tc{n} = {name};").ok();
            }
        }
        if self.uses_vpos {
            copies.push_str("v_pos = vec4<f32>(frag_pos.xy - 0.5, 0.0, 0.0);\n");
        }
        if self.uses_vface {
            copies.push_str("v_face = vec4<f32>(select(-1.0, 1.0, front));\n");
        }
        let mut outputs = Vec::new();
        if self.sm1 {
            outputs.push((
                "@location(0) c0: vec4<f32>".to_string(),
                format!("out.c0 = {};", self.srgb_write("r0")),
            ));
            t.color_outputs = 1;
            if self.sm1_writes_depth() {
                outputs.push((
                    "@builtin(frag_depth) depth: f32".into(),
                    "out.depth = clamp(o_depth.x, 0.0, 1.0);".into(),
                ));
                t.writes_depth = true;
            }
        }
        for &(ty, n) in &self.regs {
            if ty == RegType::ColorOut as u8 {
                outputs.push((
                    format!("@location({n}) c{n}: vec4<f32>"),
                    format!("out.c{n} = {};", self.srgb_write(&format!("oc{n}"))),
                ));
                t.color_outputs |= 1 << n;
            } else if ty == RegType::DepthOut as u8 {
                outputs.push((
                    "@builtin(frag_depth) depth: f32".into(),
                    "out.depth = clamp(o_depth.x, 0.0, 1.0);".into(),
                ));
                t.writes_depth = true;
            }
        }
        let (ret, build) = if outputs.is_empty() {
            (String::new(), String::new())
        } else {
            m.push_str("struct PsOut {\n");
            for (field, _) in &outputs {
                writeln!(m, "{field},").ok();
            }
            m.push_str("}\n");
            let mut b = "var out: PsOut;\n".to_string();
            for (_, set) in &outputs {
                writeln!(b, "{set}").ok();
            }
            b.push_str("return out;\n");
            (" -> PsOut".to_string(), b)
        };
        let alpha_test = match self.key.alpha_test {
            None => String::new(),
            Some(test) => {
                use super::CompareFunc as F;
                let colour = if self.sm1 { "r0" } else { "oc0" };
                if !self.sm1 && t.color_outputs & 1 == 0 {
                    return Err(malformed("alpha test without an oC0 write"));
                }
                let op = match test.func {
                    F::Never => None,
                    F::Always => Some("".to_string()),
                    F::Less => Some("<".into()),
                    F::Equal => Some("==".into()),
                    F::LessEqual => Some("<=".into()),
                    F::Greater => Some(">".into()),
                    F::NotEqual => Some("!=".into()),
                    F::GreaterEqual => Some(">=".into()),
                };
                match op {
                    None => "discard;\n".into(),
                    Some(op) if op.is_empty() => String::new(),
                    Some(op) => format!(
                        "if (!(u32(round(clamp({colour}.a, 0.0, 1.0) * 255.0)) {op} {}u)) {{ discard; }}\n",
                        test.reference
                    ),
                }
            }
        };
        writeln!(
            m,
            "@fragment\nfn fs_main({}){ret} {{\n{copies}shader_main();\n{alpha_test}{build}}}",
            params.join(", ")
        )
        .ok();
        Ok(())
    }
}

impl Writer<'_> {
    fn sm1_writes_depth(&self) -> bool {
        self.sm1
            && self
                .shader
                .instructions
                .iter()
                .any(|i| matches!(i.op, Op::TexM3x2Depth | Op::TexDepth))
    }
}

/// A DCL write mask, where 0 (never emitted by assemblers) means all four.
fn full_mask(mask: u8) -> u8 {
    if mask == 0 { 0xF } else { mask }
}

fn matrix_rows(op: Op) -> Option<u32> {
    match op {
        Op::M4x4 | Op::M3x4 => Some(4),
        Op::M4x3 | Op::M3x3 => Some(3),
        Op::M3x2 => Some(2),
        _ => None,
    }
}

/// D3D9 semantics WGSL's built-ins do not have directly.
const HELPERS: &str = "
fn d3d_srgb_decode(c: vec4<f32>) -> vec4<f32> {
    let v = clamp(c.rgb, vec3<f32>(0.0), vec3<f32>(1.0));
    let lin = select(pow((v + 0.055) / 1.055, vec3<f32>(2.4)), v / 12.92, v <= vec3<f32>(0.04045));
    return vec4<f32>(lin, c.a);
}
fn d3d_srgb_encode(c: vec4<f32>) -> vec4<f32> {
    let v = clamp(c.rgb, vec3<f32>(0.0), vec3<f32>(1.0));
    let enc = select(1.055 * pow(v, vec3<f32>(1.0 / 2.4)) - 0.055, v * 12.92, v <= vec3<f32>(0.0031308));
    return vec4<f32>(enc, c.a);
}
// log of 0 is -infinity in D3D9; WGSL leaves it undefined, so -FLT_MAX.
fn d3d_log(x: f32) -> f32 {
    if (x == 0.0) { return -3.4028235e38; }
    return log2(abs(x));
}
fn d3d_pow(x: f32, y: f32) -> f32 {
    if (y == 0.0) { return 1.0; }
    return exp2(y * log2(abs(x)));
}
// texm3x3spec/vspec: the eye vector reflected about the normal.
fn d3d_reflect(n: vec3<f32>, e: vec3<f32>) -> vec3<f32> {
    let nn = dot(n, n);
    if (nn == 0.0) { return -e; }
    return 2.0 * n * dot(n, e) / nn - e;
}
fn d3d_nrm(v: vec4<f32>) -> vec4<f32> {
    let d = dot(v.xyz, v.xyz);
    if (d == 0.0) { return vec4<f32>(0.0); }
    return v * inverseSqrt(d);
}
fn d3d_lit(s: vec4<f32>) -> vec4<f32> {
    var r = vec4<f32>(1.0, 0.0, 0.0, 1.0);
    let power = clamp(s.w, -127.9961, 127.9961);
    if (s.x > 0.0) {
        r.y = s.x;
        if (s.y > 0.0) { r.z = d3d_pow(s.y, power); }
    }
    return r;
}
// vs_1_1 expp/logp: the four-component partial-precision forms.
fn d3d_expp(x: f32) -> vec4<f32> {
    let f = floor(x);
    return vec4<f32>(exp2(f), x - f, exp2(x), 1.0);
}
fn d3d_logp(x: f32) -> vec4<f32> {
    let a = abs(x);
    if (a == 0.0) { return vec4<f32>(-3.4028235e38, 1.0, -3.4028235e38, 1.0); }
    let e = floor(log2(a));
    return vec4<f32>(e, a / exp2(e), log2(a), 1.0);
}
";

pub fn write(shader: &Shader, key: &VariantKey) -> Result<Translated, TranslateError> {
    let mut w = Writer::new(shader, key);
    w.collect_decls()?;
    w.collect_regs()?;
    w.instructions()?;
    let (wgsl, mut t) = w.module()?;
    t.wgsl = wgsl;
    Ok(t)
}
