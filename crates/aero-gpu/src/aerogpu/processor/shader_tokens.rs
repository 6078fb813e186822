//! A walk over D3D9 SM2/SM3 instruction tokens: which integer (i#) and boolean (b#)
//! constant registers a shader reads. Those drive its static flow control (loop/rep
//! counts, if/callnz on a bool), so an executor needs them at every draw; a reference
//! past the 16 registers the protocol carries is a validation error.

use aero_protocol::cmd;
use aero_protocol::wire::read_u32;

use crate::aerogpu::error::PacketError;

/// The i#/b# registers a shader reads (bit n = register n).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConstantUse {
    pub int_registers: u16,
    pub bool_registers: u16,
}

const OP_COMMENT: u32 = 0xFFFE;
const OP_END: u32 = 0xFFFF;
const OP_DCL: u32 = 0x1F;
const OP_DEF: u32 = 0x51;
const OP_DEFB: u32 = 0x2F;
const OP_DEFI: u32 = 0x30;
/// D3DSPR_CONSTINT and D3DSPR_CONSTBOOL.
const REG_CONSTINT: u32 = 7;
const REG_CONSTBOOL: u32 = 14;

fn invalid(what: &'static str, value: u64) -> PacketError {
    PacketError::InvalidValue { what, value }
}

/// Register type of a parameter token (bits 28..30 low, 11..12 high).
fn register_type(token: u32) -> u32 {
    ((token >> 28) & 0x7) | ((token >> 8) & 0x18)
}

/// Walks `tokens` (a whole shader, framing already checked: version first, END last).
/// Shader model 1 has no instruction lengths and no i#/b# registers: nothing to read.
pub fn constant_use(tokens: &[u8]) -> Result<ConstantUse, PacketError> {
    let count = tokens.len() / 4;
    let token = |i: usize| read_u32(tokens, i * 4);
    let mut used = ConstantUse::default();
    if (token(0) >> 8) & 0xFF < 2 {
        return Ok(used);
    }
    let mut i = 1;
    while i < count {
        let t = token(i);
        let opcode = t & 0xFFFF;
        if opcode == OP_END {
            return Ok(used);
        }
        let len = if opcode == OP_COMMENT {
            ((t >> 16) & 0x7FFF) as usize
        } else {
            ((t >> 24) & 0xF) as usize
        };
        let end = i + 1 + len;
        if end > count {
            return Err(invalid("D3D9 instruction length", i as u64));
        }
        if opcode != OP_COMMENT {
            // Parameter tokens; DCL's first one is the usage token, DEF*'s the literal
            // values after the destination.
            let params = match opcode {
                OP_DCL => i + 2..end,
                OP_DEF | OP_DEFB | OP_DEFI => i + 1..(i + 2).min(end),
                _ => i + 1..end,
            };
            for p in params {
                let param = token(p);
                let number = param & 0x7FF;
                let (mask, limit) = match register_type(param) {
                    REG_CONSTINT => (&mut used.int_registers, cmd::MAX_SHADER_CONSTANTS_I),
                    REG_CONSTBOOL => (&mut used.bool_registers, cmd::MAX_SHADER_CONSTANTS_B),
                    _ => continue,
                };
                if number >= limit {
                    return Err(invalid("D3D9 int/bool constant register", number.into()));
                }
                *mask |= 1 << number;
            }
        }
        i = end;
    }
    Err(invalid("D3D9 shader without END", count as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(tokens: &[u32]) -> Vec<u8> {
        tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
    }

    /// vs_2_0: rep i3 / if b5 / loop aL, i0, with a comment and a defi of i1.
    const FLOW_VS: &[u32] = &[
        0xFFFE_0200,
        0x0002_FFFE, // comment, 2 tokens
        0x0100_0026, // that look like an i15 reference but are comment text
        0xF0E4_000F,
        0x0500_0030, // defi i1, 3, 0, 1, 0
        0xF00F_0001,
        3,
        0,
        1,
        0,
        0x0100_0026, // rep i3
        0xF0E4_0003,
        0x0000_0027, // endrep
        0x0100_0028, // if b5
        0xE0E4_0805,
        0x0000_002B, // endif
        0x0200_001B, // loop aL, i0
        0xF0E4_0800, // aL
        0xF0E4_0000, // i0
        0x0000_001D, // endloop
        0x0000_FFFF,
    ];

    #[test]
    fn reads_int_and_bool_registers_of_flow_control() {
        let used = constant_use(&bytes(FLOW_VS)).unwrap();
        assert_eq!(used.int_registers, 1 << 0 | 1 << 1 | 1 << 3);
        assert_eq!(used.bool_registers, 1 << 5);
        // Shader model 1: nothing to read.
        assert_eq!(
            constant_use(&bytes(&[0xFFFE_0101, 0x0000_FFFF])).unwrap(),
            ConstantUse::default()
        );
    }

    #[test]
    fn rejects_registers_past_16_and_overlong_instructions() {
        let mut past = FLOW_VS.to_vec();
        past[11] = 0xF0E4_0010; // rep i16
        assert!(constant_use(&bytes(&past)).is_err());
        let mut b_past = FLOW_VS.to_vec();
        b_past[14] = 0xE0E4_0811; // if b17
        assert!(constant_use(&bytes(&b_past)).is_err());
        // An instruction claiming more tokens than remain.
        assert!(constant_use(&bytes(&[0xFFFE_0200, 0x0F00_0001, 0x0000_FFFF])).is_err());
        // No END token reached by the walk.
        assert!(constant_use(&bytes(&[0xFFFE_0200, 0x0100_0026, 0x0000_FFFF])).is_err());
    }
}
