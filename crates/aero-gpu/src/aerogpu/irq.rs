//! IRQ_STATUS / IRQ_ENABLE / IRQ_ACK and the level of the INTx line.

/// A status bit latches only while enabled; disabling a bit also clears its status so a
/// later enable never delivers a stale event. The line is level-triggered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqState {
    status: u32,
    enable: u32,
}

impl IrqState {
    pub fn status(&self) -> u32 {
        self.status
    }

    pub fn enable(&self) -> u32 {
        self.enable
    }

    pub fn set_enable(&mut self, mask: u32) {
        self.enable = mask;
        self.status &= mask;
    }

    pub fn ack(&mut self, mask: u32) {
        self.status &= !mask;
    }

    pub fn raise(&mut self, bits: u32) {
        self.status |= bits & self.enable;
    }

    /// Whether INTx is asserted.
    pub fn level(&self) -> bool {
        self.status & self.enable != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latch_only_while_enabled_and_ack_clears() {
        let mut irq = IrqState::default();
        irq.raise(1);
        assert_eq!(irq.status(), 0);
        assert!(!irq.level());
        irq.set_enable(0b11);
        irq.raise(0b101);
        assert_eq!(irq.status(), 0b001);
        assert!(irq.level());
        irq.ack(0b001);
        assert!(!irq.level());
        irq.raise(0b10);
        irq.set_enable(0b01);
        assert_eq!(irq.status(), 0, "disabling clears the disabled bits");
    }
}
