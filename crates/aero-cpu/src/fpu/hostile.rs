//! Hostile-input test: every x87 and SSE pure function on random and edge-case
//! encodings, under every control word setting, must return without panicking
//! (debug builds check integer overflow).

use super::transcend::{self, Constant};
use super::{F80, X87Env, arith, convert};
use crate::sse::{Mxcsr, convert as sconv, float as sfloat, int as sint};

fn edge_values() -> Vec<F80> {
    let exps = [
        0u16, 1, 2, 0x3FFE, 0x3FFF, 0x4000, 0x403E, 0x403F, 0x4040, 0x7FFD, 0x7FFE, 0x7FFF,
    ];
    let mants = [
        0u64,
        1,
        1 << 62,
        1 << 63,
        (1 << 63) | 1,
        (1 << 63) | (1 << 62),
        u64::MAX,
        u64::MAX >> 1,
        0xC90F_DAA2_2168_C235,
    ];
    let mut v = Vec::new();
    for &e in &exps {
        for &m in &mants {
            v.push(F80::new(false, e, m));
            v.push(F80::new(true, e, m));
        }
    }
    v
}

#[test]
fn fpu_hostile_inputs_never_panic() {
    let mut seed = 0xF00D_CAFE_1234_5678u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut values = edge_values();
    for _ in 0..300 {
        let r = next();
        values.push(F80 {
            sign_exp: (r >> 48) as u16,
            mantissa: next(),
        });
    }
    let envs: Vec<X87Env> = [0x037F, 0x0000, 0x0C40, 0x0B7F, 0x047F, 0x0840]
        .iter()
        .map(|&cw| X87Env::from_control_word(cw))
        .collect();
    let mut sink = 0u64;
    for (k, &a) in values.iter().enumerate() {
        let b = values[(k * 7 + 3) % values.len()];
        let env = &envs[k % envs.len()];
        for r in [
            arith::add(a, b, env),
            arith::sub(a, b, env),
            arith::mul(a, b, env),
            arith::div(a, b, env),
            arith::sqrt(a, env),
            arith::round_to_integer(a, env),
            transcend::fpatan(a, b, env),
            transcend::fyl2x(a, b, env),
            transcend::fyl2xp1(a, b, env),
            transcend::f2xm1(a, env),
            transcend::fscale(a, b, env),
            transcend::fprem(a, b, false).result,
            transcend::fprem(a, b, true).result,
            transcend::fxtract(a).0,
        ] {
            // Results are always supported encodings: no unnormals or pseudo-NaNs appear.
            let v = r.value;
            assert!(
                v.exponent() == 0 || v.mantissa >> 63 == 1,
                "{a:?} {b:?} -> {v:?}"
            );
            sink ^= v.mantissa;
        }
        // Unsupported operands give the indefinite with #IA.
        let unsupported = a.exponent() != 0 && a.mantissa >> 63 == 0;
        if unsupported {
            let r = arith::add(a, F80::ONE, env);
            assert_eq!((r.value, r.flags & 1), (F80::INDEFINITE, 1));
        }
        for r in [
            transcend::fsin(a, env),
            transcend::fcos(a, env),
            transcend::fptan(a, env),
        ]
        .into_iter()
        .flatten()
        {
            sink ^= r.value.mantissa;
        }
        let _ = transcend::fsincos(a, env);
        let _ = arith::compare(a, b, k % 2 == 0);
        for bits in [16, 32, 64] {
            sink ^= convert::to_int(a, env, bits, k % 2 == 0).0 as u64;
        }
        sink ^= convert::f80_to_f32(a, env).0 as u64 ^ convert::f80_to_f64(a, env).0;
        sink ^= convert::to_bcd(a, env).0[0] as u64;
        let mut bcd = a.to_le_bytes();
        bcd[9] = (a.sign_exp >> 8) as u8;
        sink ^= convert::from_bcd(bcd).mantissa;
        sink ^= transcend::load_constant(Constant::Pi, env).mantissa;

        // SSE on the same random bits, under assorted MXCSR values.
        let mx = Mxcsr([0x1F80, 0x9FC0, 0x0000, 0x7F80, 0x3F80][k % 5]);
        for kind in [sfloat::F32, sfloat::F64] {
            let (x, y) = (a.mantissa, b.mantissa);
            let (x, y) = if kind.bits() == 32 {
                (x & 0xFFFF_FFFF, y >> 32)
            } else {
                (x, y)
            };
            for op in [
                sfloat::Arith::Add,
                sfloat::Arith::Sub,
                sfloat::Arith::Mul,
                sfloat::Arith::Div,
            ] {
                sink ^= sfloat::arith(kind, op, x, y, mx).0;
            }
            sink ^= sfloat::sqrt(kind, x, mx).0 ^ sfloat::min_max(kind, k % 2 == 0, x, y, mx).0;
            sink ^= sfloat::cmp_predicate(kind, (k % 8) as u8, x, y, mx).0;
            sink ^= sconv::float_to_int(kind, x, 32, false, mx).0 as u64
                ^ sconv::float_to_int(kind, x, 64, true, mx).0 as u64;
            sink ^= sconv::int_to_float(kind, x as i64, mx).0;
        }
        sink ^= sconv::float_to_float(sfloat::F64, sfloat::F32, a.mantissa, mx).0;
        let (va, vb) = (
            (a.mantissa as u128) << 64 | b.mantissa as u128,
            (b.mantissa as u128) << 32,
        );
        for bits in [8, 16, 32, 64] {
            sink ^= (sint::psll(va, vb as u64, bits)
                ^ sint::psra(va, vb as u64, bits.min(32))
                ^ sint::padds(va, vb, bits.min(16))) as u64;
        }
        sink ^= (sint::pshufb(va, vb, 16)
            ^ sint::palignr(va, vb, a.mantissa as u8, 16)
            ^ sint::pslldq(va, b.mantissa as u8)) as u64;
    }
    // Keeps the work observable.
    std::hint::black_box(sink);
}
