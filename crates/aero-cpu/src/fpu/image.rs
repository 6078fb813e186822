//! x87/SSE state as memory images: FSTENV/FLDENV, FSAVE/FRSTOR (16- and 32-bit,
//! real and protected layouts, SDM vol. 1 figures 8-9..8-12) and FXSAVE/FXRSTOR
//! (SDM vol. 2, table 3-53). The CPU core copies these bytes to/from guest memory.

use super::f80::F80;
use super::state::X87State;
use crate::sse::{MXCSR_MASK, SseState};

/// Layout of the FSTENV/FSAVE environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvLayout {
    Real16,
    Protected16,
    Real32,
    Protected32,
}

impl EnvLayout {
    pub fn new(operand_32: bool, protected: bool) -> Self {
        match (operand_32, protected) {
            (false, false) => EnvLayout::Real16,
            (false, true) => EnvLayout::Protected16,
            (true, false) => EnvLayout::Real32,
            (true, true) => EnvLayout::Protected32,
        }
    }
    /// Environment size in bytes (14 or 28).
    pub fn env_size(self) -> usize {
        match self {
            EnvLayout::Real16 | EnvLayout::Protected16 => 14,
            _ => 28,
        }
    }
    /// FSAVE image size in bytes (94 or 108).
    pub fn save_size(self) -> usize {
        self.env_size() + 80
    }
}

/// Invalid state images.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("MXCSR value {0:#x} sets reserved bits")]
    ReservedMxcsr(u32),
}

fn put16(b: &mut [u8], off: usize, v: u16) {
    if let Some(d) = b.get_mut(off..off + 2) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}
fn put32(b: &mut [u8], off: usize, v: u32) {
    if let Some(d) = b.get_mut(off..off + 4) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    if let Some(d) = b.get_mut(off..off + 8) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}
fn get16(b: &[u8], off: usize) -> u16 {
    b.get(off..off + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}
fn get32(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn get64(b: &[u8], off: usize) -> u64 {
    (get32(b, off) as u64) | ((get32(b, off + 4) as u64) << 32)
}
fn get_f80(b: &[u8], off: usize) -> F80 {
    let mut r = [0u8; 10];
    if let Some(s) = b.get(off..off + 10) {
        r.copy_from_slice(s);
    }
    F80::from_le_bytes(r)
}

impl X87State {
    /// The FSTENV image (without side effects); only `layout.env_size()` bytes are used.
    pub fn env_image(&self, layout: EnvLayout) -> [u8; 28] {
        let mut b = [0u8; 28];
        let fip = self.fip as u32;
        let fdp = self.fdp as u32;
        let fop = self.fop & 0x7FF;
        match layout {
            EnvLayout::Protected32 | EnvLayout::Real32 => {
                // Reserved upper halves read back as ones on Intel hardware.
                for off in [0, 4, 8] {
                    put32(&mut b, off, 0xFFFF_0000);
                }
                put16(&mut b, 0, self.control);
                put16(&mut b, 4, self.status);
                put16(&mut b, 8, self.tag_word());
                if layout == EnvLayout::Protected32 {
                    put32(&mut b, 12, fip);
                    put32(&mut b, 16, self.fcs as u32 | ((fop as u32) << 16));
                    put32(&mut b, 20, fdp);
                    put32(&mut b, 24, 0xFFFF_0000 | self.fds as u32);
                } else {
                    put32(&mut b, 12, 0xFFFF_0000 | (fip & 0xFFFF));
                    put32(&mut b, 16, ((fip >> 16) << 12) | fop as u32);
                    put32(&mut b, 20, 0xFFFF_0000 | (fdp & 0xFFFF));
                    put32(&mut b, 24, (fdp >> 16) << 12);
                }
            }
            EnvLayout::Protected16 | EnvLayout::Real16 => {
                put16(&mut b, 0, self.control);
                put16(&mut b, 2, self.status);
                put16(&mut b, 4, self.tag_word());
                put16(&mut b, 6, fip as u16);
                put16(&mut b, 10, fdp as u16);
                if layout == EnvLayout::Protected16 {
                    put16(&mut b, 8, self.fcs);
                    put16(&mut b, 12, self.fds);
                } else {
                    put16(&mut b, 8, ((((fip >> 16) & 0xF) << 12) as u16) | fop);
                    put16(&mut b, 12, (((fdp >> 16) & 0xF) << 12) as u16);
                }
            }
        }
        b
    }

    /// FLDENV from an image of at least `layout.env_size()` bytes (shorter reads as 0).
    pub fn load_env(&mut self, layout: EnvLayout, b: &[u8]) {
        let (cw, sw, tw) = match layout {
            EnvLayout::Protected32 | EnvLayout::Real32 => (get16(b, 0), get16(b, 4), get16(b, 8)),
            _ => (get16(b, 0), get16(b, 2), get16(b, 4)),
        };
        match layout {
            EnvLayout::Protected32 => {
                self.fip = get32(b, 12) as u64;
                self.fcs = get16(b, 16);
                self.fop = get16(b, 18) & 0x7FF;
                self.fdp = get32(b, 20) as u64;
                self.fds = get16(b, 24);
            }
            EnvLayout::Real32 => {
                let w = get32(b, 16);
                self.fip = ((get16(b, 12) as u32) | ((w >> 12) & 0xFFFF) << 16) as u64;
                self.fop = (w & 0x7FF) as u16;
                self.fdp = ((get16(b, 20) as u32) | ((get32(b, 24) >> 12) & 0xFFFF) << 16) as u64;
                self.fcs = 0;
                self.fds = 0;
            }
            EnvLayout::Protected16 => {
                self.fip = get16(b, 6) as u64;
                self.fcs = get16(b, 8);
                self.fdp = get16(b, 10) as u64;
                self.fds = get16(b, 12);
            }
            EnvLayout::Real16 => {
                let w = get16(b, 8);
                self.fip = (get16(b, 6) as u64) | (((w >> 12) as u64) << 16);
                self.fop = w & 0x7FF;
                self.fdp = (get16(b, 10) as u64) | (((get16(b, 12) >> 12) as u64) << 16);
                self.fcs = 0;
                self.fds = 0;
            }
        }
        self.control = (cw & 0x1F3F) | 0x0040;
        self.status = sw;
        self.set_tag_word(tw);
        self.update_summary();
    }

    /// FNSTENV: stores the environment, then masks all exceptions.
    pub fn fnstenv(&mut self, layout: EnvLayout) -> [u8; 28] {
        let img = self.env_image(layout);
        self.control |= 0x3F;
        self.update_summary();
        img
    }

    /// FNSAVE: environment plus ST(0)..ST(7), then FNINIT. Only `layout.save_size()`
    /// bytes are meaningful.
    pub fn fnsave(&mut self, layout: EnvLayout) -> [u8; 108] {
        let mut b = [0u8; 108];
        let n = layout.env_size();
        b[..n].copy_from_slice(&self.env_image(layout)[..n]);
        for i in 0..8 {
            b[n + 10 * i..n + 10 * i + 10].copy_from_slice(&self.st(i).to_le_bytes());
        }
        self.init();
        b
    }

    /// FRSTOR: the inverse of [`X87State::fnsave`].
    pub fn frstor(&mut self, layout: EnvLayout, b: &[u8]) {
        self.load_env(layout, b);
        let n = layout.env_size();
        for i in 0..8 {
            let v = get_f80(b, n + 10 * i);
            let p = self.phys(i);
            self.regs[p] = v;
        }
    }
}

/// FXSAVE operand forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FxLayout {
    /// Legacy/compatibility: 32-bit FIP/FDP with selectors, XMM0-7.
    Legacy32,
    /// 64-bit mode without REX.W: 32-bit pointers with selectors, XMM0-15.
    Long32,
    /// FXSAVE64 (REX.W): 64-bit FIP/FDP, XMM0-15.
    Long64,
}

impl FxLayout {
    /// Bytes actually written; the rest of the 512-byte area is left untouched.
    pub fn written_len(self) -> usize {
        match self {
            FxLayout::Legacy32 => 160 + 8 * 16,
            _ => 160 + 16 * 16,
        }
    }
    fn xmm_count(self) -> usize {
        if self == FxLayout::Legacy32 { 8 } else { 16 }
    }
}

/// The FXSAVE image. Write `layout.written_len()` bytes of it to memory.
pub fn fxsave(x87: &X87State, sse: &SseState, layout: FxLayout) -> [u8; 512] {
    let mut b = [0u8; 512];
    put16(&mut b, 0, x87.control);
    put16(&mut b, 2, x87.status);
    b[4] = x87.abridged_tag();
    put16(&mut b, 6, x87.fop & 0x7FF);
    if layout == FxLayout::Long64 {
        put64(&mut b, 8, x87.fip);
        put64(&mut b, 16, x87.fdp);
    } else {
        put32(&mut b, 8, x87.fip as u32);
        put16(&mut b, 12, x87.fcs);
        put32(&mut b, 16, x87.fdp as u32);
        put16(&mut b, 20, x87.fds);
    }
    put32(&mut b, 24, sse.mxcsr);
    put32(&mut b, 28, MXCSR_MASK);
    for i in 0..8 {
        b[32 + 16 * i..42 + 16 * i].copy_from_slice(&x87.st(i).to_le_bytes());
    }
    for i in 0..layout.xmm_count() {
        b[160 + 16 * i..176 + 16 * i].copy_from_slice(&sse.xmm[i].to_le_bytes());
    }
    b
}

/// FXRSTOR from a 512-byte image. Fails (#GP) when MXCSR has reserved bits set; in that
/// case nothing is modified.
pub fn fxrstor(
    x87: &mut X87State,
    sse: &mut SseState,
    layout: FxLayout,
    b: &[u8],
) -> Result<(), ImageError> {
    let mxcsr = get32(b, 24);
    sse.set_mxcsr(mxcsr)?;
    x87.control = (get16(b, 0) & 0x1F3F) | 0x0040;
    x87.status = get16(b, 2);
    x87.set_abridged_tag(b.get(4).copied().unwrap_or(0));
    x87.fop = get16(b, 6) & 0x7FF;
    if layout == FxLayout::Long64 {
        x87.fip = get64(b, 8);
        x87.fdp = get64(b, 16);
    } else {
        x87.fip = get32(b, 8) as u64;
        x87.fcs = get16(b, 12);
        x87.fdp = get32(b, 16) as u64;
        x87.fds = get16(b, 20);
    }
    for i in 0..8 {
        let v = get_f80(b, 32 + 16 * i);
        let p = x87.phys(i);
        x87.regs[p] = v;
    }
    for i in 0..layout.xmm_count() {
        let off = 160 + 16 * i;
        if let Some(s) = b.get(off..off + 16) {
            let mut a = [0u8; 16];
            a.copy_from_slice(s);
            sse.xmm[i] = u128::from_le_bytes(a);
        }
    }
    x87.update_summary();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpu::convert::from_i64;

    fn sample() -> X87State {
        let mut s = X87State::at_reset();
        s.init();
        s.push(F80::ONE);
        s.push(from_i64(-3));
        s.record_instruction(0x1234_5678, 0x0008, 0x1C1, Some((0x9ABC_DEF0, 0x0010)));
        s.status |= 0x20;
        s
    }

    #[test]
    fn fpu_image_fstenv_protected32_layout() {
        let s = sample();
        let b = s.env_image(EnvLayout::Protected32);
        assert_eq!(get32(&b, 0), 0xFFFF_037F);
        assert_eq!(get16(&b, 4), 0x3020); // TOP = 6, PE
        assert_eq!(get16(&b, 8), 0x0FFF); // R7, R6 valid, rest empty
        assert_eq!(get32(&b, 12), 0x1234_5678);
        assert_eq!(get32(&b, 16), 0x01C1_0008);
        assert_eq!(get32(&b, 20), 0x9ABC_DEF0);
        assert_eq!(get16(&b, 24), 0x0010);
    }

    #[test]
    fn fpu_image_env_roundtrip_every_layout() {
        for layout in [
            EnvLayout::Real16,
            EnvLayout::Protected16,
            EnvLayout::Real32,
            EnvLayout::Protected32,
        ] {
            let mut s = sample();
            if matches!(layout, EnvLayout::Real16) {
                s.fip &= 0xF_FFFF;
                s.fdp &= 0xF_FFFF;
            }
            if matches!(layout, EnvLayout::Protected16) {
                s.fip &= 0xFFFF;
                s.fdp &= 0xFFFF;
                s.fop = 0;
            }
            let img = s.fnsave(layout);
            assert_eq!(s.tag_word(), 0xFFFF, "FNSAVE reinitialises");
            let mut t = X87State::at_reset();
            t.frstor(layout, &img[..layout.save_size()]);
            let mut want = sample();
            if matches!(layout, EnvLayout::Real16 | EnvLayout::Real32) {
                want.fcs = 0;
                want.fds = 0;
            }
            if matches!(layout, EnvLayout::Real16) {
                want.fip &= 0xF_FFFF;
                want.fdp &= 0xF_FFFF;
            }
            if matches!(layout, EnvLayout::Protected16) {
                want.fip &= 0xFFFF;
                want.fdp &= 0xFFFF;
                want.fop = t.fop;
            }
            // Empty registers keep stale contents; compare the meaningful state.
            assert_eq!(
                (
                    t.control, t.status, t.empty, t.fip, t.fdp, t.fcs, t.fds, t.fop
                ),
                (
                    want.control,
                    want.status,
                    want.empty,
                    want.fip,
                    want.fdp,
                    want.fcs,
                    want.fds,
                    want.fop
                ),
                "{layout:?}"
            );
            assert_eq!((t.st(0), t.st(1)), (want.st(0), want.st(1)));
        }
    }

    #[test]
    fn fpu_image_fxsave_offsets_and_roundtrip() {
        let x = sample();
        let mut sse = SseState::default();
        sse.xmm[0] = 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF;
        sse.xmm[15] = 0xF00D;
        sse.mxcsr = 0x1FA0;
        let b = fxsave(&x, &sse, FxLayout::Long64);
        assert_eq!(get16(&b, 0), 0x037F);
        assert_eq!(get16(&b, 2), 0x3020);
        assert_eq!(b[4], 0xC0); // abridged tag: R6 and R7 in use
        assert_eq!(get16(&b, 6), 0x1C1);
        assert_eq!(get64(&b, 8), 0x1234_5678);
        assert_eq!(get64(&b, 16), 0x9ABC_DEF0);
        assert_eq!(get32(&b, 24), 0x1FA0);
        assert_eq!(get32(&b, 28), 0xFFFF);
        assert_eq!(&b[32..42], &from_i64(-3).to_le_bytes());
        assert_eq!(&b[48..58], &F80::ONE.to_le_bytes());
        assert_eq!(b[160], 0xFF);
        assert_eq!(get16(&b, 160 + 15 * 16), 0xF00D);
        assert_eq!(FxLayout::Legacy32.written_len(), 288);
        let legacy = fxsave(&x, &sse, FxLayout::Legacy32);
        assert_eq!(get16(&legacy, 12), 0x0008);
        assert_eq!(get16(&legacy, 20), 0x0010);

        let mut x2 = X87State::at_reset();
        let mut sse2 = SseState::default();
        fxrstor(&mut x2, &mut sse2, FxLayout::Long64, &b).unwrap();
        assert_eq!(sse2, sse);
        assert_eq!(
            (x2.st(0), x2.st(1), x2.empty, x2.status),
            (x.st(0), x.st(1), x.empty, x.status)
        );
        let mut bad = b;
        put32(&mut bad, 24, 0x1_0000);
        assert_eq!(
            fxrstor(&mut x2, &mut sse2, FxLayout::Long64, &bad),
            Err(ImageError::ReservedMxcsr(0x1_0000))
        );
    }
}
