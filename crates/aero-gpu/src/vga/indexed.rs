//! An index/data register file, the shape shared by the sequencer, graphics controller
//! and CRTC. Unimplemented bits read back as zero via per-register masks.

#[derive(Clone, Debug)]
pub(crate) struct IndexedRegs<const N: usize> {
    index: u8,
    index_mask: u8,
    regs: [u8; N],
    masks: [u8; N],
}

impl<const N: usize> IndexedRegs<N> {
    pub(crate) fn new(index_mask: u8, masks: [u8; N], initial: [u8; N]) -> Self {
        let mut regs = initial;
        for (r, m) in regs.iter_mut().zip(masks) {
            *r &= m;
        }
        IndexedRegs {
            index: 0,
            index_mask,
            regs,
            masks,
        }
    }

    pub(crate) fn index(&self) -> u8 {
        self.index
    }

    pub(crate) fn set_index(&mut self, value: u8) {
        self.index = value & self.index_mask;
    }

    /// The selected register; indices past the file read as zero.
    pub(crate) fn read(&self) -> u8 {
        self.regs.get(usize::from(self.index)).copied().unwrap_or(0)
    }

    /// Writes the selected register (masked); indices past the file are ignored.
    pub(crate) fn write(&mut self, value: u8) {
        self.set(self.index, value);
    }

    pub(crate) fn get(&self, index: u8) -> u8 {
        self.regs.get(usize::from(index)).copied().unwrap_or(0)
    }

    pub(crate) fn set(&mut self, index: u8, value: u8) {
        let i = usize::from(index);
        if let (Some(reg), Some(mask)) = (self.regs.get_mut(i), self.masks.get(i)) {
            *reg = value & mask;
        }
    }
}
