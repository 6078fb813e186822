//! Scalar and packed f32/f64 arithmetic with x86 SSE semantics.
//!
//! NaN rules (SDM vol. 1, table 4-7): if the first source is a NaN the result is that
//! NaN quietened, else the second source's NaN quietened; invalid operations produce the
//! default NaN (negative QNaN). DAZ turns denormal inputs into zeros (no #D); FTZ is
//! applied by the rounding step. Every function returns the result bits and the MXCSR
//! flags raised; the caller ORs flags into MXCSR and suppresses the write if any raised
//! exception is unmasked.

use crate::fpu::softfloat::{self, DE, Exact, FMT_F32, FMT_F64, Finite, Format, IE, Rounding, ZE};

use super::Mxcsr;

/// An IEEE binary format held in the low bits of a u64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub frac_bits: u32,
    pub format: Format,
}

pub const F32: Kind = Kind {
    frac_bits: 23,
    format: FMT_F32,
};
pub const F64: Kind = Kind {
    frac_bits: 52,
    format: FMT_F64,
};

/// A classified operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Zero(bool),
    Finite(Finite),
    Inf(bool),
    QNan,
    SNan,
}

impl Kind {
    pub fn bits(self) -> u32 {
        if self.frac_bits == 23 { 32 } else { 64 }
    }
    fn exp_max(self) -> u64 {
        (2 * self.format.emax + 1) as u64
    }
    fn frac_mask(self) -> u64 {
        (1 << self.frac_bits) - 1
    }
    fn sign_bit(self) -> u64 {
        1 << (self.bits() - 1)
    }
    pub fn default_nan(self) -> u64 {
        self.sign_bit() | (self.exp_max() << self.frac_bits) | (1 << (self.frac_bits - 1))
    }
    pub fn quiet(self, v: u64) -> u64 {
        v | (1 << (self.frac_bits - 1))
    }
    pub fn is_nan(self, v: u64) -> bool {
        (v >> self.frac_bits) & self.exp_max() == self.exp_max() && v & self.frac_mask() != 0
    }
    pub fn is_snan(self, v: u64) -> bool {
        self.is_nan(v) && v & (1 << (self.frac_bits - 1)) == 0
    }
    fn zero(self, sign: bool) -> u64 {
        if sign { self.sign_bit() } else { 0 }
    }
    fn inf(self, sign: bool) -> u64 {
        self.zero(sign) | (self.exp_max() << self.frac_bits)
    }

    /// Classifies `v`, applying DAZ; returns the operand and #D when it is a denormal.
    pub(crate) fn classify(self, v: u64, daz: bool) -> (Op, u8) {
        let sign = v & self.sign_bit() != 0;
        let exp = (v >> self.frac_bits) & self.exp_max();
        let frac = v & self.frac_mask();
        if exp == self.exp_max() {
            return match (frac == 0, frac >> (self.frac_bits - 1) != 0) {
                (true, _) => (Op::Inf(sign), 0),
                (false, true) => (Op::QNan, 0),
                (false, false) => (Op::SNan, 0),
            };
        }
        if exp == 0 {
            if frac == 0 {
                return (Op::Zero(sign), 0);
            }
            if daz {
                return (Op::Zero(sign), 0);
            }
            let f = Finite::new(sign, self.format.emin - self.frac_bits as i32 + 63, frac);
            return (Op::Finite(f), DE);
        }
        let sig = (1 << 63) | (frac << (63 - self.frac_bits));
        (
            Op::Finite(Finite {
                sign,
                exp: exp as i32 - self.format.emax,
                sig,
            }),
            0,
        )
    }

    /// Rounds and packs an exact value under MXCSR.
    pub(crate) fn round(self, x: Exact, mx: Mxcsr, rounding: Rounding) -> (u64, u8) {
        let r = softfloat::round(x, &mx.round_env_with(self.format, rounding));
        let bits = self.zero(r.sign)
            | ((r.bexp as u64) << self.frac_bits)
            | ((r.sig >> (63 - self.frac_bits)) & self.frac_mask());
        (bits, r.flags)
    }

    /// NaN propagation: the first operand's NaN wins, quietened.
    fn nan_pick(self, a: u64, b: u64) -> (u64, u8) {
        let flags = if self.is_snan(a) || self.is_snan(b) {
            IE
        } else {
            0
        };
        let pick = if self.is_nan(a) { a } else { b };
        (self.quiet(pick), flags)
    }
}

/// The four basic operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// a (op) b for one element.
pub fn arith(kind: Kind, op: Arith, a: u64, b: u64, mx: Mxcsr) -> (u64, u8) {
    if let Some(r) = super::fast::arith(kind, op, a, b, mx) {
        return r;
    }
    arith_soft(kind, op, a, b, mx)
}

/// a (op) b on the soft-float core (every case, every MXCSR setting).
pub fn arith_soft(kind: Kind, op: Arith, a: u64, b: u64, mx: Mxcsr) -> (u64, u8) {
    if kind.is_nan(a) || kind.is_nan(b) {
        return kind.nan_pick(a, b);
    }
    let (ca, da) = kind.classify(a, mx.daz());
    let (cb, db) = kind.classify(b, mx.daz());
    let de = da | db;
    let invalid = (kind.default_nan(), IE);
    let rc = mx.rounding();
    let rounded = |x: Exact| {
        let (v, f) = kind.round(x, mx, rc);
        (v, f | de)
    };
    match op {
        Arith::Add | Arith::Sub => {
            let cb = if op == Arith::Sub { negate(cb) } else { cb };
            match (ca, cb) {
                (Op::Inf(sa), Op::Inf(sb)) if sa != sb => invalid,
                (Op::Inf(s), _) | (_, Op::Inf(s)) => (kind.inf(s), de),
                (Op::Zero(sa), Op::Zero(sb)) => (
                    kind.zero(if sa == sb { sa } else { rc == Rounding::Down }),
                    de,
                ),
                (Op::Finite(f), Op::Zero(_)) | (Op::Zero(_), Op::Finite(f)) => rounded(f.into()),
                (Op::Finite(x), Op::Finite(y)) => rounded(softfloat::add(x, y, rc)),
                _ => invalid,
            }
        }
        Arith::Mul => {
            let sign = sign_of(ca) ^ sign_of(cb);
            match (ca, cb) {
                (Op::Inf(_), Op::Zero(_)) | (Op::Zero(_), Op::Inf(_)) => invalid,
                (Op::Inf(_), _) | (_, Op::Inf(_)) => (kind.inf(sign), de),
                (Op::Zero(_), _) | (_, Op::Zero(_)) => (kind.zero(sign), de),
                (Op::Finite(x), Op::Finite(y)) => rounded(softfloat::mul(x, y)),
                _ => invalid,
            }
        }
        Arith::Div => {
            let sign = sign_of(ca) ^ sign_of(cb);
            match (ca, cb) {
                (Op::Inf(_), Op::Inf(_)) | (Op::Zero(_), Op::Zero(_)) => invalid,
                (Op::Inf(_), _) => (kind.inf(sign), de),
                (_, Op::Inf(_)) | (Op::Zero(_), _) => (kind.zero(sign), de),
                (_, Op::Zero(_)) => (kind.inf(sign), de | ZE),
                (Op::Finite(x), Op::Finite(y)) => rounded(softfloat::div(x, y)),
                _ => invalid,
            }
        }
    }
}

fn negate(c: Op) -> Op {
    match c {
        Op::Zero(s) => Op::Zero(!s),
        Op::Inf(s) => Op::Inf(!s),
        Op::Finite(f) => Op::Finite(Finite { sign: !f.sign, ..f }),
        other => other,
    }
}

fn sign_of(c: Op) -> bool {
    match c {
        Op::Zero(s) | Op::Inf(s) => s,
        Op::Finite(f) => f.sign,
        _ => false,
    }
}

/// SQRTSS/SQRTSD element.
pub fn sqrt(kind: Kind, a: u64, mx: Mxcsr) -> (u64, u8) {
    if let Some(r) = super::fast::sqrt(kind, a, mx) {
        return r;
    }
    sqrt_soft(kind, a, mx)
}

/// Square root on the soft-float core.
pub fn sqrt_soft(kind: Kind, a: u64, mx: Mxcsr) -> (u64, u8) {
    if kind.is_nan(a) {
        return kind.nan_pick(a, a);
    }
    match kind.classify(a, mx.daz()) {
        (Op::Zero(s), _) => (kind.zero(s), 0),
        (Op::Inf(false), _) => (a, 0),
        (Op::Inf(true), _) | (Op::Finite(Finite { sign: true, .. }), _) => (kind.default_nan(), IE),
        (Op::Finite(f), de) => {
            let (v, fl) = kind.round(softfloat::sqrt(f), mx, mx.rounding());
            (v, fl | de)
        }
        _ => (kind.default_nan(), IE),
    }
}

/// Ordering of two operands, None when unordered; `signal_qnan` makes QNaNs raise #I.
pub fn compare(
    kind: Kind,
    a: u64,
    b: u64,
    signal_qnan: bool,
    mx: Mxcsr,
) -> (Option<std::cmp::Ordering>, u8) {
    if kind.is_nan(a) || kind.is_nan(b) {
        let ie = kind.is_snan(a) || kind.is_snan(b) || signal_qnan;
        return (None, if ie { IE } else { 0 });
    }
    let (ca, da) = kind.classify(a, mx.daz());
    let (cb, db) = kind.classify(b, mx.daz());
    let key = |c: Op| -> (i8, i32, u64) {
        match c {
            Op::Zero(_) => (0, 0, 0),
            Op::Inf(s) => (if s { -2 } else { 2 }, 0, 0),
            Op::Finite(f) if f.sign => (-1, -f.exp, !f.sig),
            Op::Finite(f) => (1, f.exp, f.sig),
            _ => (0, 0, 0),
        }
    };
    (Some(key(ca).cmp(&key(cb))), da | db)
}

/// CMPPS/CMPSS predicate (imm8 bits 0-2): all-ones mask when true.
pub fn cmp_predicate(kind: Kind, pred: u8, a: u64, b: u64, mx: Mxcsr) -> (u64, u8) {
    use std::cmp::Ordering::*;
    // LT, LE, NLT, NLE signal on QNaN; EQ, UNORD, NEQ, ORD only on SNaN.
    let signaling = matches!(pred & 7, 1 | 2 | 5 | 6);
    let (ord, flags) = compare(kind, a, b, signaling, mx);
    let t = match (pred & 7, ord) {
        (0, o) => o == Some(Equal),
        (1, o) => o == Some(Less),
        (2, o) => matches!(o, Some(Less | Equal)),
        (3, o) => o.is_none(),
        (4, o) => o != Some(Equal),
        (5, o) => o != Some(Less),
        (6, o) => !matches!(o, Some(Less | Equal)),
        (_, o) => o.is_some(),
    };
    let ones = if kind.bits() == 32 {
        u32::MAX as u64
    } else {
        u64::MAX
    };
    (if t { ones } else { 0 }, flags)
}

/// MINSS/MAXSS element: the second operand wins for NaNs and for equal (±0) inputs.
pub fn min_max(kind: Kind, max: bool, a: u64, b: u64, mx: Mxcsr) -> (u64, u8) {
    use std::cmp::Ordering::*;
    let (ord, flags) = compare(kind, a, b, true, mx);
    let pick_a = match ord {
        Some(Less) => !max,
        Some(Greater) => max,
        _ => false,
    };
    let v = if pick_a { a } else { b };
    // DAZ converts denormal sources to zero before the operation, so a chosen denormal
    // comes back as the signed zero (QEMU 7.2 returns the raw bits instead).
    let denormal = (v >> kind.frac_bits) & kind.exp_max() == 0 && v & kind.frac_mask() != 0;
    let v = if mx.daz() && denormal {
        v & kind.sign_bit()
    } else {
        v
    };
    (v, flags)
}

/// Applies an element function to each lane of a packed register.
pub fn packed2(
    kind: Kind,
    a: u128,
    b: u128,
    mut f: impl FnMut(u64, u64) -> (u64, u8),
) -> (u128, u8) {
    let bits = kind.bits();
    let mask = if bits == 64 {
        u64::MAX as u128
    } else {
        u32::MAX as u128
    };
    let mut out = 0u128;
    let mut flags = 0;
    for i in 0..128 / bits {
        let x = ((a >> (i * bits)) & mask) as u64;
        let y = ((b >> (i * bits)) & mask) as u64;
        let (r, fl) = f(x, y);
        out |= (r as u128 & mask) << (i * bits);
        flags |= fl;
    }
    (out, flags)
}

/// Replaces the low element of `a` with `v` (scalar ops keep the upper elements).
pub fn set_low(kind: Kind, a: u128, v: u64) -> u128 {
    let mask = if kind.bits() == 64 {
        u64::MAX as u128
    } else {
        u32::MAX as u128
    };
    (a & !mask) | (v as u128 & mask)
}

pub fn low(kind: Kind, a: u128) -> u64 {
    if kind.bits() == 64 {
        a as u64
    } else {
        a as u32 as u64
    }
}

/// ADDSUBPS/PD (SSE3): subtract in even lanes, add in odd lanes.
pub fn addsub(kind: Kind, a: u128, b: u128, mx: Mxcsr) -> (u128, u8) {
    let mut lane = 0;
    packed2(kind, a, b, |x, y| {
        let op = if lane % 2 == 0 {
            Arith::Sub
        } else {
            Arith::Add
        };
        lane += 1;
        arith(kind, op, x, y, mx)
    })
}

/// HADDPS/HSUBPS/HADDPD/HSUBPD (SSE3): pairwise operations, a's pairs then b's.
pub fn horizontal(kind: Kind, op: Arith, a: u128, b: u128, mx: Mxcsr) -> (u128, u8) {
    let bits = kind.bits();
    let n = (128 / bits) as usize;
    let lane = |v: u128, i: usize| low(kind, v >> (i as u32 * bits));
    let mut out = 0u128;
    let mut flags = 0;
    for i in 0..n {
        let (src, j) = if i < n / 2 {
            (a, 2 * i)
        } else {
            (b, 2 * (i - n / 2))
        };
        let (r, f) = arith(kind, op, lane(src, j), lane(src, j + 1), mx);
        out = set_lane(kind, out, i, r);
        flags |= f;
    }
    (out, flags)
}

fn set_lane(kind: Kind, v: u128, i: usize, x: u64) -> u128 {
    let bits = kind.bits();
    let mask = if bits == 64 {
        u64::MAX as u128
    } else {
        u32::MAX as u128
    };
    let shift = i as u32 * bits;
    (v & !(mask << shift)) | ((x as u128 & mask) << shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::MXCSR_DEFAULT;

    const MX: Mxcsr = Mxcsr(MXCSR_DEFAULT);

    fn f32b(x: f32) -> u64 {
        x.to_bits() as u64
    }

    #[test]
    fn sse_float_matches_host_in_property_loop() {
        let mut seed = 0x0BAD_5EED_1234_4321u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20000 {
            let (a, b) = (next(), next());
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            if x.is_nan() || y.is_nan() {
                continue;
            }
            let check = |op, want: f64| {
                let (got, _) = arith(F64, op, a, b, MX);
                if want.is_nan() {
                    assert_eq!(got, F64.default_nan());
                } else {
                    assert_eq!(got, want.to_bits(), "{op:?} {x:e} {y:e}");
                }
            };
            check(Arith::Add, x + y);
            check(Arith::Sub, x - y);
            check(Arith::Mul, x * y);
            check(Arith::Div, x / y);
            let (xs, ys) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            if !xs.is_nan() && !ys.is_nan() {
                let want = xs * ys;
                let got = arith(F32, Arith::Mul, a as u32 as u64, b as u32 as u64, MX).0;
                if !want.is_nan() {
                    assert_eq!(got, f32b(want), "{xs:e} * {ys:e}");
                }
                if xs >= 0.0 {
                    assert_eq!(sqrt(F32, a as u32 as u64, MX).0, f32b(xs.sqrt()));
                }
            }
        }
    }

    #[test]
    fn sse_float_nan_rules_and_flags() {
        let qa = 0x7FC0_0001u64;
        let sb = 0x7F80_0002u64;
        assert_eq!(arith(F32, Arith::Add, qa, sb, MX), (qa, IE));
        assert_eq!(arith(F32, Arith::Add, sb, qa, MX), (0x7FC0_0002, IE));
        assert_eq!(arith(F32, Arith::Mul, f32b(1.0), qa, MX), (qa, 0));
        assert_eq!(
            arith(
                F32,
                Arith::Sub,
                f32b(f32::INFINITY),
                f32b(f32::INFINITY),
                MX
            ),
            (0xFFC0_0000, IE)
        );
        assert_eq!(
            sqrt(F64, (-1.0f64).to_bits(), MX),
            (0xFFF8_0000_0000_0000, IE)
        );
        assert_eq!(
            arith(F32, Arith::Div, f32b(1.0), 0, MX),
            (f32b(f32::INFINITY), ZE)
        );
        let (v, f) = arith(F32, Arith::Div, f32b(1.0), f32b(3.0), MX);
        assert_eq!((v, f), (f32b(1.0 / 3.0), softfloat::PE));
        let (v, f) = arith(F32, Arith::Mul, f32b(f32::MAX), f32b(2.0), MX);
        assert_eq!((v, f), (f32b(f32::INFINITY), softfloat::OE | softfloat::PE));
        // Round toward zero via MXCSR.RC = 11.
        let rz = Mxcsr(MXCSR_DEFAULT | 0x6000);
        assert_eq!(
            arith(F32, Arith::Mul, f32b(f32::MAX), f32b(2.0), rz).0,
            f32b(f32::MAX)
        );
        assert_eq!(
            arith(F32, Arith::Div, f32b(2.0), f32b(3.0), rz).0,
            0x3F2A_AAAA
        );
        // Denormal operand: #D unless DAZ, which turns it into zero.
        assert_eq!(arith(F32, Arith::Add, 1, 0, MX), (1, DE));
        let daz = Mxcsr(MXCSR_DEFAULT | 0x40);
        assert_eq!(arith(F32, Arith::Add, 1, 0, daz), (0, 0));
        // FTZ: tiny results flush to zero with UE|PE.
        let ftz = Mxcsr(MXCSR_DEFAULT | 0x8000);
        let tiny = f32b(f32::MIN_POSITIVE);
        assert_eq!(
            arith(F32, Arith::Mul, tiny, f32b(0.5), ftz),
            (0, softfloat::UE | softfloat::PE)
        );
        assert_eq!(arith(F32, Arith::Mul, tiny, f32b(0.5), MX), (tiny / 2, 0));
    }

    #[test]
    fn sse_float_compare_min_max_packed() {
        let nan = 0x7FC0_0000u64;
        assert_eq!(
            cmp_predicate(F32, 1, f32b(1.0), f32b(2.0), MX),
            (0xFFFF_FFFF, 0)
        );
        assert_eq!(cmp_predicate(F32, 1, nan, f32b(2.0), MX), (0, IE));
        assert_eq!(cmp_predicate(F32, 3, nan, f32b(2.0), MX), (0xFFFF_FFFF, 0));
        assert_eq!(cmp_predicate(F32, 4, nan, nan, MX), (0xFFFF_FFFF, 0));
        assert_eq!(min_max(F32, false, nan, f32b(2.0), MX).0, f32b(2.0));
        assert_eq!(min_max(F32, false, f32b(2.0), nan, MX).0, nan);
        assert_eq!(min_max(F32, true, f32b(-0.0), f32b(0.0), MX).0, f32b(0.0));
        assert_eq!(min_max(F32, true, f32b(0.0), f32b(-0.0), MX).0, f32b(-0.0));
        assert_eq!(
            min_max(F64, true, 3.0f64.to_bits(), 2.0f64.to_bits(), MX).0,
            3.0f64.to_bits()
        );
        let a = (f32b(4.0) as u128)
            | (f32b(1.0) as u128) << 32
            | (f32b(10.0) as u128) << 64
            | (f32b(2.0) as u128) << 96;
        let b = (f32b(1.0) as u128)
            | (f32b(1.0) as u128) << 32
            | (f32b(5.0) as u128) << 64
            | (f32b(6.0) as u128) << 96;
        let (h, _) = horizontal(F32, Arith::Add, a, b, MX);
        assert_eq!(
            h,
            (f32b(5.0) as u128)
                | (f32b(12.0) as u128) << 32
                | (f32b(2.0) as u128) << 64
                | (f32b(11.0) as u128) << 96
        );
        let (s, _) = addsub(F32, a, b, MX);
        assert_eq!(s as u32 as u64, f32b(3.0));
        assert_eq!((s >> 32) as u32 as u64, f32b(2.0));
    }
}
