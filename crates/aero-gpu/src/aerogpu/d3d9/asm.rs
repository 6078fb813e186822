//! A small D3D9 shader assembler (text → tokens) for tests and the D3D9 test programs.
//!
//! The syntax is the DirectX assembler's, one instruction per line:
//! ```text
//! ps_2_0                       // version first (vs_1_1, ps_1_4, vs_2_x, ps_3_0, ...)
//! def c0, 1, 0.5, 0, 1         // def/defi/defb
//! dcl_2d s0                    // dcl_2d/_cube/_volume, dcl_texcoord0 v1, dcl t0.xy
//! texld r0, t0, s0             // texldp, texldb, texldl, texldd
//! mad_sat r1.xy, -r0_abs.x, c[a0.x + 2], 1-r2_bias
//! (!p0.y) mov r2, r1           // predication; `+` before co-issued ps_1_x instructions
//! if_lt r0.x, c0.y             // comparisons as suffixes: if, break, setp
//! ```
//! Source modifiers: `-`, `1-` (complement), `!` (predicates) before the register;
//! `_abs _bias _bx2 _x2 _dz _dw` after it. Destination suffixes: `_sat _pp _centroid`
//! and the ps_1_x shifts `_x2 _x4 _x8 _d2 _d4 _d8`. `;` and `//` start comments.

use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct AsmError {
    pub line: usize,
    pub message: String,
}

/// Assembles `text` into D3D9 tokens, END included.
pub fn assemble(text: &str) -> Result<Vec<u32>, AsmError> {
    let mut a = Assembler {
        tokens: Vec::new(),
        major: 0,
        line: 0,
    };
    let mut version_seen = false;
    for (i, raw) in text.lines().enumerate() {
        a.line = i + 1;
        let line = raw.split("//").next().unwrap_or("");
        let line = line.split(';').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if !version_seen {
            a.version(line)?;
            version_seen = true;
            continue;
        }
        a.instruction(line)?;
    }
    if !version_seen {
        return Err(AsmError {
            line: 0,
            message: "no version line".into(),
        });
    }
    a.tokens.push(0x0000_FFFF);
    Ok(a.tokens)
}

struct Assembler {
    tokens: Vec<u32>,
    major: u32,
    line: usize,
}

/// Register type numbers (D3DSHADER_PARAM_REGISTER_TYPE).
const TEMP: u32 = 0;
const INPUT: u32 = 1;
const CONST: u32 = 2;
const ADDR: u32 = 3;
const RASTOUT: u32 = 4;
const ATTROUT: u32 = 5;
const OUTPUT: u32 = 6;
const CONSTINT: u32 = 7;
const COLOROUT: u32 = 8;
const DEPTHOUT: u32 = 9;
const SAMPLER: u32 = 10;
const CONSTBOOL: u32 = 14;
const LOOP: u32 = 15;
const MISC: u32 = 17;
const LABEL: u32 = 18;
const PREDICATE: u32 = 19;

fn type_bits(ty: u32) -> u32 {
    ((ty & 7) << 28) | ((ty & 0x18) << 8)
}

fn opcode(name: &str) -> Option<u32> {
    Some(match name {
        "nop" => 0x00,
        "mov" => 0x01,
        "add" => 0x02,
        "sub" => 0x03,
        "mad" => 0x04,
        "mul" => 0x05,
        "rcp" => 0x06,
        "rsq" => 0x07,
        "dp3" => 0x08,
        "dp4" => 0x09,
        "min" => 0x0A,
        "max" => 0x0B,
        "slt" => 0x0C,
        "sge" => 0x0D,
        "exp" => 0x0E,
        "log" => 0x0F,
        "lit" => 0x10,
        "dst" => 0x11,
        "lrp" => 0x12,
        "frc" => 0x13,
        "m4x4" => 0x14,
        "m4x3" => 0x15,
        "m3x4" => 0x16,
        "m3x3" => 0x17,
        "m3x2" => 0x18,
        "call" => 0x19,
        "callnz" => 0x1A,
        "loop" => 0x1B,
        "ret" => 0x1C,
        "endloop" => 0x1D,
        "label" => 0x1E,
        "pow" => 0x20,
        "crs" => 0x21,
        "sgn" => 0x22,
        "abs" => 0x23,
        "nrm" => 0x24,
        "sincos" => 0x25,
        "rep" => 0x26,
        "endrep" => 0x27,
        "if" => 0x28,
        "else" => 0x2A,
        "endif" => 0x2B,
        "break" => 0x2C,
        "mova" => 0x2E,
        "texcoord" | "texcrd" => 0x40,
        "texkill" => 0x41,
        "tex" | "texld" => 0x42,
        "texldp" => 0x42 | 1 << 16,
        "texldb" => 0x42 | 2 << 16,
        "texbem" => 0x43,
        "texbeml" => 0x44,
        "texreg2ar" => 0x45,
        "texreg2gb" => 0x46,
        "texm3x2pad" => 0x47,
        "texm3x2tex" => 0x48,
        "texm3x3pad" => 0x49,
        "texm3x3tex" => 0x4A,
        "texm3x3spec" => 0x4C,
        "texm3x3vspec" => 0x4D,
        "expp" => 0x4E,
        "logp" => 0x4F,
        "cnd" => 0x50,
        "texreg2rgb" => 0x52,
        "texdp3tex" => 0x53,
        "texm3x2depth" => 0x54,
        "texdp3" => 0x55,
        "texm3x3" => 0x56,
        "texdepth" => 0x57,
        "cmp" => 0x58,
        "bem" => 0x59,
        "dp2add" => 0x5A,
        "dsx" => 0x5B,
        "dsy" => 0x5C,
        "texldd" => 0x5D,
        "setp" => 0x5E,
        "texldl" => 0x5F,
        "breakp" => 0x60,
        "phase" => 0xFFFD,
        _ => return None,
    })
}

/// Opcodes whose first operand is not a destination.
fn has_dst(code: u32) -> bool {
    !matches!(
        code & 0xFFFF,
        0x00 | 0x19..=0x1E | 0x26..=0x2D | 0x60 | 0xFFFD
    )
}

impl Assembler {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, AsmError> {
        Err(AsmError {
            line: self.line,
            message: message.into(),
        })
    }

    fn version(&mut self, line: &str) -> Result<(), AsmError> {
        let parts: Vec<&str> = line.split('_').collect();
        let (kind, major, minor) = match parts.as_slice() {
            [k, maj, min] => (*k, *maj, *min),
            _ => return self.err("version line like ps_2_0"),
        };
        let kind = match kind {
            "vs" => 0xFFFE,
            "ps" => 0xFFFF,
            _ => return self.err("version must start with vs or ps"),
        };
        let Ok(major) = major.parse::<u32>() else {
            return self.err("version major");
        };
        let minor = match minor {
            "x" => 1,
            m => match m.parse::<u32>() {
                Ok(m) => m,
                Err(_) => return self.err("version minor"),
            },
        };
        self.major = major;
        self.tokens.push(kind << 16 | major << 8 | minor);
        Ok(())
    }

    fn instruction(&mut self, line: &str) -> Result<(), AsmError> {
        let mut line = line;
        let mut control = 0u32;
        if let Some(rest) = line.strip_prefix('+') {
            control |= 1 << 30;
            line = rest.trim_start();
        }
        let mut predicate = None;
        if let Some(rest) = line.strip_prefix('(') {
            let Some(close) = rest.find(')') else {
                return self.err("unclosed predicate");
            };
            predicate = Some(self.src(rest[..close].trim())?);
            control |= 1 << 28;
            line = rest[close + 1..].trim_start();
        }
        let (mnemonic, operands) = match line.find(char::is_whitespace) {
            Some(i) => (&line[..i], line[i..].trim()),
            None => (line, ""),
        };
        let operands: Vec<&str> = if operands.is_empty() {
            Vec::new()
        } else {
            operands.split(',').map(str::trim).collect()
        };
        if let Some(usage) = mnemonic.strip_prefix("dcl") {
            return self.dcl(usage, &operands);
        }
        match mnemonic {
            "def" | "defi" | "defb" => return self.def(mnemonic, &operands),
            _ => {}
        }
        let mut parts = mnemonic.split('_');
        let base = parts.next().unwrap_or("");
        let mut dst_mods = 0u32;
        let mut shift = 0i32;
        let mut compare = 0u32;
        for suffix in parts {
            match suffix {
                "sat" => dst_mods |= 1,
                "pp" => dst_mods |= 2,
                "centroid" => dst_mods |= 4,
                "x2" => shift = 1,
                "x4" => shift = 2,
                "x8" => shift = 3,
                "d2" => shift = -1,
                "d4" => shift = -2,
                "d8" => shift = -3,
                "gt" => compare = 1,
                "eq" => compare = 2,
                "ge" => compare = 3,
                "lt" => compare = 4,
                "ne" => compare = 5,
                "le" => compare = 6,
                _ => return self.err(format!("unknown suffix _{suffix}")),
            }
        }
        let mut code = match opcode(base) {
            Some(c) => c,
            None => return self.err(format!("unknown instruction {base}")),
        };
        if compare != 0 {
            code = match base {
                "if" => 0x29,
                "break" => 0x2D,
                "setp" => 0x5E,
                _ => return self.err("comparison on an instruction without one"),
            } | compare << 16;
        }
        let mut body = Vec::new();
        let mut rest = operands.as_slice();
        if has_dst(code) {
            let Some((first, tail)) = rest.split_first() else {
                return self.err("missing destination");
            };
            body.extend(self.dst(first, dst_mods, shift)?);
            rest = tail;
        } else if dst_mods != 0 || shift != 0 {
            return self.err("result modifier without a destination");
        }
        if let Some(p) = predicate {
            body.extend(p);
        }
        for s in rest {
            body.extend(self.src(s)?);
        }
        self.emit(code | control, &body);
        Ok(())
    }

    fn emit(&mut self, code: u32, body: &[u32]) {
        let length = if self.major >= 2 {
            (body.len() as u32 & 0xF) << 24
        } else {
            0
        };
        self.tokens.push(code | length);
        self.tokens.extend_from_slice(body);
    }

    fn dcl(&mut self, usage: &str, operands: &[&str]) -> Result<(), AsmError> {
        let usage = usage.strip_prefix('_').unwrap_or(usage);
        let [reg] = operands else {
            return self.err("dcl takes one register");
        };
        let usage_token = match usage {
            "" => 0x8000_0000,
            "2d" => 0x8000_0000 | 2 << 27,
            "cube" => 0x8000_0000 | 3 << 27,
            "volume" => 0x8000_0000 | 4 << 27,
            _ => {
                let digits = usage.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                let name = &usage[..usage.len() - digits.len()];
                let index: u32 = if digits.is_empty() {
                    0
                } else {
                    match digits.parse() {
                        Ok(i) if i < 16 => i,
                        _ => return self.err("usage index"),
                    }
                };
                let code = match name {
                    "position" => 0,
                    "blendweight" => 1,
                    "blendindices" => 2,
                    "normal" => 3,
                    "psize" => 4,
                    "texcoord" => 5,
                    "tangent" => 6,
                    "binormal" => 7,
                    "tessfactor" => 8,
                    "positiont" => 9,
                    "color" => 10,
                    "fog" => 11,
                    "depth" => 12,
                    "sample" => 13,
                    _ => return self.err(format!("unknown usage {name}")),
                };
                0x8000_0000 | code | index << 16
            }
        };
        let (reg, mods) = match reg.strip_suffix("_centroid") {
            Some(r) => (r, 4),
            None => (*reg, 0),
        };
        let mut body = vec![usage_token];
        body.extend(self.dst(reg, mods, 0)?);
        self.emit(0x1F, &body);
        Ok(())
    }

    fn def(&mut self, which: &str, operands: &[&str]) -> Result<(), AsmError> {
        let Some((reg, values)) = operands.split_first() else {
            return self.err("def needs a register");
        };
        let mut body = self.dst(reg, 0, 0)?;
        let code = match which {
            "def" | "defi" => {
                if values.len() != 4 {
                    return self.err("def/defi need four values");
                }
                for v in values {
                    let token = if which == "def" {
                        match v.trim_end_matches('f').parse::<f32>() {
                            Ok(f) => f.to_bits(),
                            Err(_) => return self.err(format!("bad float {v}")),
                        }
                    } else {
                        match v.parse::<i32>() {
                            Ok(i) => i as u32,
                            Err(_) => return self.err(format!("bad integer {v}")),
                        }
                    };
                    body.push(token);
                }
                if which == "def" { 0x51 } else { 0x30 }
            }
            _ => {
                let value = match values {
                    ["true"] => 1,
                    ["false"] => 0,
                    _ => return self.err("defb takes true or false"),
                };
                body.push(value);
                0x2F
            }
        };
        self.emit(code, &body);
        Ok(())
    }

    /// `name` → (type, number) for one register, without index brackets.
    fn register(&self, name: &str) -> Result<(u32, u32), AsmError> {
        let fixed = match name {
            "oPos" => Some((RASTOUT, 0)),
            "oFog" => Some((RASTOUT, 1)),
            "oPts" => Some((RASTOUT, 2)),
            "oDepth" => Some((DEPTHOUT, 0)),
            "aL" => Some((LOOP, 0)),
            "vPos" => Some((MISC, 0)),
            "vFace" => Some((MISC, 1)),
            "a0" => Some((ADDR, 0)),
            "p0" => Some((PREDICATE, 0)),
            _ => None,
        };
        if let Some(r) = fixed {
            return Ok(r);
        }
        let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let prefix = &name[..name.len() - digits.len()];
        let number: u32 = match digits.parse() {
            Ok(n) if n < 2048 => n,
            _ => return self.err(format!("bad register {name}")),
        };
        let ty = match prefix {
            "r" => TEMP,
            "v" => INPUT,
            "c" => CONST,
            "t" => ADDR,
            "oD" => ATTROUT,
            "oT" | "o" => OUTPUT,
            "i" => CONSTINT,
            "oC" => COLOROUT,
            "s" => SAMPLER,
            "b" => CONSTBOOL,
            "l" => LABEL,
            _ => return self.err(format!("unknown register {name}")),
        };
        Ok((ty, number))
    }

    fn component(&self, c: char) -> Result<u32, AsmError> {
        Ok(match c {
            'x' | 'r' => 0,
            'y' | 'g' => 1,
            'z' | 'b' => 2,
            'w' | 'a' => 3,
            _ => return self.err(format!("bad component {c}")),
        })
    }

    /// Splits `reg.swz` and `c[a0.x + 4]`/`c4[aL]`; returns (type, number, relative
    /// token, swizzle text).
    fn operand(&self, text: &str) -> Result<(u32, u32, Option<u32>, String), AsmError> {
        let (head, swizzle) = match text.rfind('.') {
            Some(i) if !text[i..].contains(']') => (&text[..i], text[i + 1..].to_string()),
            _ => (text, String::new()),
        };
        let Some(open) = head.find('[') else {
            let (ty, n) = self.register(head)?;
            return Ok((ty, n, None, swizzle));
        };
        let Some(inner) = head[open + 1..].strip_suffix(']') else {
            return self.err("unclosed [");
        };
        let name = &head[..open];
        let (ty, mut number) = match name {
            "c" => (CONST, 0),
            "v" => (INPUT, 0),
            "o" => (OUTPUT, 0),
            _ => self.register(name)?,
        };
        let mut rel = None;
        for term in inner.split('+').map(str::trim) {
            if let Ok(n) = term.parse::<u32>() {
                number += n;
                continue;
            }
            let (reg, comp) = match term.split_once('.') {
                Some((r, c)) => (r, c),
                None => (term, "x"),
            };
            let (rty, rn) = self.register(reg)?;
            if rty != ADDR && rty != LOOP {
                return self.err("relative address must be a0 or aL");
            }
            let c = self.component(comp.chars().next().unwrap_or('x'))?;
            let swz = c | c << 2 | c << 4 | c << 6;
            rel = Some(0x8000_0000 | type_bits(rty) | rn | swz << 16);
        }
        if number >= 2048 {
            return self.err("register number");
        }
        Ok((ty, number, rel, swizzle))
    }

    fn dst(&self, text: &str, mods: u32, shift: i32) -> Result<Vec<u32>, AsmError> {
        let (ty, number, rel, mask_text) = self.operand(text)?;
        let mut mask = 0;
        for c in mask_text.chars() {
            mask |= 1 << self.component(c)?;
        }
        if mask_text.is_empty() {
            mask = 0xF;
        }
        let mut t = 0x8000_0000
            | type_bits(ty)
            | number
            | mask << 16
            | mods << 20
            | ((shift as u32) & 0xF) << 24;
        let mut out = Vec::new();
        if let Some(rel) = rel {
            t |= 1 << 13;
            out.push(t);
            if self.major >= 2 {
                out.push(rel);
            }
        } else {
            out.push(t);
        }
        Ok(out)
    }

    fn src(&self, text: &str) -> Result<Vec<u32>, AsmError> {
        let mut text = text.trim();
        let mut modifier = 0u32;
        if let Some(rest) = text.strip_prefix("1-") {
            modifier = 6;
            text = rest.trim();
        } else if let Some(rest) = text.strip_prefix('-') {
            modifier = 1;
            text = rest.trim();
        } else if let Some(rest) = text.strip_prefix('!') {
            modifier = 13;
            text = rest.trim();
        }
        let negated = modifier == 1;
        // Suffix modifiers sit between the register and the swizzle: r0_abs.x
        let (body, swz) = match text.rfind('.') {
            Some(i) if !text[i..].contains(']') => (&text[..i], &text[i..]),
            _ => (text, ""),
        };
        let (body, suffix) = match body.rsplit_once('_') {
            Some((b, s)) if !b.is_empty() && !s.contains(']') => (b, Some(s)),
            _ => (body, None),
        };
        if let Some(s) = suffix {
            modifier = match (s, negated) {
                ("abs", false) => 11,
                ("abs", true) => 12,
                ("bias", false) => 2,
                ("bias", true) => 3,
                ("bx2", false) => 4,
                ("bx2", true) => 5,
                ("x2", false) => 7,
                ("x2", true) => 8,
                ("dz", false) => 9,
                ("dw", false) => 10,
                _ => return self.err(format!("bad source modifier _{s}")),
            };
        }
        let joined = format!("{body}{swz}");
        let (ty, number, rel, swizzle_text) = self.operand(&joined)?;
        let mut sw = [0u32, 1, 2, 3];
        if !swizzle_text.is_empty() {
            let comps: Vec<u32> = swizzle_text
                .chars()
                .map(|c| self.component(c))
                .collect::<Result<_, _>>()?;
            if comps.len() > 4 {
                return self.err("swizzle longer than 4");
            }
            for (i, slot) in sw.iter_mut().enumerate() {
                *slot = comps[i.min(comps.len() - 1)];
            }
        }
        let swizzle = sw[0] | sw[1] << 2 | sw[2] << 4 | sw[3] << 6;
        let mut t = 0x8000_0000 | type_bits(ty) | number | swizzle << 16 | modifier << 24;
        let mut out = Vec::new();
        if let Some(rel) = rel {
            t |= 1 << 13;
            out.push(t);
            if self.major >= 2 {
                out.push(rel);
            }
        } else {
            out.push(t);
        }
        Ok(out)
    }
}
