//! Parsing of the result records the test image writes to the debug console.

use super::layout::*;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub id: u32,
    /// Exception vector taken by the instruction, if any.
    pub exc_vec: Option<u8>,
    pub exc_err: u64,
    pub exc_ip: u64,
    pub gpr: [u64; 16],
    pub rflags: u64,
    /// ES, CS, SS, DS, FS, GS selectors.
    pub segs: [u16; 6],
    pub fx: Option<Vec<u8>>,
    pub scratch: Vec<u8>,
    pub stack: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct Parsed {
    pub records: Vec<Record>,
    /// The END marker was seen (the whole batch ran).
    pub complete: bool,
    /// Bytes that did not parse (a corrupted or truncated stream), with their offset.
    pub garbage_at: Option<usize>,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(x)
}

pub fn parse(stream: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    let mut pos = 0;
    while pos < stream.len() {
        let rest = &stream[pos..];
        if rest.starts_with(END_MARKER) {
            out.complete = true;
            break;
        }
        if rest.len() < OUT_LEN || u32_at(rest, 0) != RECORD_MAGIC {
            out.garbage_at = Some(pos);
            break;
        }
        let has_fx = u32_at(rest, OUT_HAS_FX as usize) != 0;
        let total = OUT_LEN + if has_fx { 512 } else { 0 } + SCRATCH_LEN + STACK_LEN;
        if rest.len() < total {
            out.garbage_at = Some(pos);
            break;
        }
        let mut gpr = [0u64; 16];
        for (i, g) in gpr.iter_mut().enumerate() {
            *g = u64_at(rest, OUT_GPR as usize + 8 * i);
        }
        let mut segs = [0u16; 6];
        for (i, s) in segs.iter_mut().enumerate() {
            let o = OUT_SEGS as usize + 2 * i;
            *s = u16::from_le_bytes([rest[o], rest[o + 1]]);
        }
        let vec = u32_at(rest, OUT_EXC_VEC as usize);
        let mut o = OUT_LEN;
        let fx = if has_fx {
            o += 512;
            Some(rest[OUT_LEN..OUT_LEN + 512].to_vec())
        } else {
            None
        };
        let scratch = rest[o..o + SCRATCH_LEN].to_vec();
        o += SCRATCH_LEN;
        let stack = rest[o..o + STACK_LEN].to_vec();
        out.records.push(Record {
            id: u32_at(rest, OUT_ID as usize),
            exc_vec: if vec == u32::MAX {
                None
            } else {
                Some(vec as u8)
            },
            exc_err: u64_at(rest, OUT_EXC_ERR as usize),
            exc_ip: u64_at(rest, OUT_EXC_IP as usize),
            gpr,
            rflags: u64_at(rest, OUT_FLAGS as usize),
            segs,
            fx,
            scratch,
            stack,
        });
        pos += total;
    }
    out
}
