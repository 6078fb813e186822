//! Intel 8259A programmable interrupt controller, master/slave pair as wired in a PC/AT,
//! plus the PIIX edge/level control registers (ELCR, ports 0x4D0/0x4D1).
//!
//! Follows the Intel 8259A datasheet (ICW1–ICW4, OCW1–OCW3, priority rotation, special
//! mask, special fully nested mode, automatic EOI, poll mode) and the PIIX3 datasheet for
//! ELCR. The slave's INT output drives the master's IR2. An INTA cycle with no request
//! left returns the spurious vector (IR7 of the chip that was asked, ISR untouched).
//!
//! Ports: master 0x20/0x21, slave 0xA0/0xA1, ELCR 0x4D0 (IRQ0–7), 0x4D1 (IRQ8–15).
//! The machine calls [`DualPic::set_irq`] with input levels, polls
//! [`DualPic::interrupt_pending`] and performs INTA with [`DualPic::acknowledge`].

use super::{PortIo, read_bytes, write_bytes};

/// Master input that the slave's INT output is wired to.
const CASCADE_LINE: u8 = 2;
/// ELCR bits that can be set: IRQ0, 1, 2 (master) and IRQ8, 13 (slave) are always edge.
const ELCR_WRITABLE: [u8; 2] = [0xF8, 0xDE];

/// Where the init sequence stands: which ICW the next data-port write is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InitStep {
    Ready,
    Icw2,
    Icw3,
    Icw4,
}

/// One 8259A.
#[derive(Clone, Debug)]
struct Chip {
    is_master: bool,
    irr: u8,
    isr: u8,
    imr: u8,
    /// Current input levels, used to detect rising edges.
    levels: u8,
    elcr: u8,
    /// ICW1 LTIM: every input is level triggered.
    ltim: bool,
    init: InitStep,
    icw4_expected: bool,
    single: bool,
    vector_base: u8,
    auto_eoi: bool,
    rotate_on_auto_eoi: bool,
    special_fully_nested: bool,
    special_mask: bool,
    /// Input with the lowest priority; `lowest + 1` (mod 8) is the highest.
    lowest_priority: u8,
    read_isr: bool,
    poll: bool,
}

impl Chip {
    fn new(is_master: bool) -> Chip {
        Chip {
            is_master,
            irr: 0,
            isr: 0,
            imr: 0xFF,
            levels: 0,
            elcr: 0,
            ltim: false,
            init: InitStep::Ready,
            icw4_expected: false,
            single: false,
            vector_base: if is_master { 0x08 } else { 0x70 },
            auto_eoi: false,
            rotate_on_auto_eoi: false,
            special_fully_nested: false,
            special_mask: false,
            lowest_priority: 7,
            read_isr: false,
            poll: false,
        }
    }

    fn level_mask(&self) -> u8 {
        if self.ltim { 0xFF } else { self.elcr }
    }

    fn set_input(&mut self, line: u8, level: bool) {
        let bit = 1u8 << (line & 7);
        if self.level_mask() & bit != 0 {
            // Level mode: the request follows the pin.
            if level {
                self.irr |= bit;
            } else {
                self.irr &= !bit;
            }
        } else if level && self.levels & bit == 0 {
            self.irr |= bit;
        }
        if level {
            self.levels |= bit;
        } else {
            self.levels &= !bit;
        }
    }

    /// Bits of `mask` in priority order, highest first.
    fn by_priority(&self) -> impl Iterator<Item = u8> + '_ {
        (1..=8u8).map(move |i| (self.lowest_priority + i) & 7)
    }

    fn highest_in(&self, mask: u8) -> Option<u8> {
        self.by_priority().find(|&line| mask & (1 << line) != 0)
    }

    /// The input that would be delivered now, honouring IMR, in-service priority,
    /// special mask and special fully nested modes.
    fn pending(&self) -> Option<u8> {
        let requests = self.irr & !self.imr;
        let candidate = self.highest_in(requests)?;
        let mut in_service = self.isr;
        if self.special_mask {
            // Masked in-service levels stop blocking (used by handlers that re-enable
            // lower priorities).
            in_service &= !self.imr;
        }
        if self.special_fully_nested && self.is_master && candidate == CASCADE_LINE {
            // A higher-priority slave request may nest over a slave interrupt in service;
            // lower master levels stay blocked by the cascade line.
            in_service &= !(1 << CASCADE_LINE);
        }
        match self.highest_in(in_service) {
            None => Some(candidate),
            Some(busy) => {
                let rank = |line: u8| line.wrapping_sub(self.lowest_priority + 1) & 7;
                (rank(candidate) < rank(busy)).then_some(candidate)
            }
        }
    }

    /// INTA for `line`: moves the request into service.
    fn accept(&mut self, line: u8) {
        let bit = 1u8 << line;
        if self.level_mask() & bit == 0 {
            self.irr &= !bit;
        }
        if self.auto_eoi {
            if self.rotate_on_auto_eoi {
                self.lowest_priority = line;
            }
        } else {
            self.isr |= bit;
        }
    }

    fn write_command(&mut self, value: u8) {
        if value & 0x10 != 0 {
            self.icw1(value);
        } else if value & 0x08 == 0 {
            self.ocw2(value);
        } else {
            self.ocw3(value);
        }
    }

    fn icw1(&mut self, value: u8) {
        self.icw4_expected = value & 0x01 != 0;
        self.single = value & 0x02 != 0;
        self.ltim = value & 0x08 != 0;
        self.init = InitStep::Icw2;
        self.imr = 0;
        self.isr = 0;
        // Edge requests are forgotten; level requests are re-sampled from the pins.
        self.irr = self.levels & self.level_mask();
        self.lowest_priority = 7;
        self.special_mask = false;
        self.read_isr = false;
        self.poll = false;
        if !self.icw4_expected {
            self.auto_eoi = false;
            self.special_fully_nested = false;
        }
        self.rotate_on_auto_eoi = false;
    }

    fn ocw2(&mut self, value: u8) {
        let line = value & 7;
        match value >> 5 {
            0b001 => {
                self.non_specific_eoi();
            }
            0b011 => self.isr &= !(1 << line),
            0b101 => {
                if let Some(done) = self.non_specific_eoi() {
                    self.lowest_priority = done;
                }
            }
            0b100 => self.rotate_on_auto_eoi = true,
            0b000 => self.rotate_on_auto_eoi = false,
            0b111 => {
                self.isr &= !(1 << line);
                self.lowest_priority = line;
            }
            0b110 => self.lowest_priority = line,
            _ => {} // 0b010: no operation
        }
    }

    fn non_specific_eoi(&mut self) -> Option<u8> {
        let line = self.highest_in(self.isr)?;
        self.isr &= !(1 << line);
        Some(line)
    }

    fn ocw3(&mut self, value: u8) {
        match (value >> 5) & 3 {
            0b11 => self.special_mask = true,
            0b10 => self.special_mask = false,
            _ => {}
        }
        self.poll = value & 0x04 != 0;
        if value & 0x02 != 0 {
            self.read_isr = value & 0x01 != 0;
        }
    }

    fn write_data(&mut self, value: u8) {
        match self.init {
            InitStep::Ready => self.imr = value,
            InitStep::Icw2 => {
                self.vector_base = value & 0xF8;
                self.init = if !self.single {
                    InitStep::Icw3
                } else if self.icw4_expected {
                    InitStep::Icw4
                } else {
                    InitStep::Ready
                };
            }
            InitStep::Icw3 => {
                // The cascade wiring is fixed in a PC; ICW3 only has to be consumed.
                self.init = if self.icw4_expected {
                    InitStep::Icw4
                } else {
                    InitStep::Ready
                };
            }
            InitStep::Icw4 => {
                if value & 0x01 == 0 {
                    tracing::warn!("8259: MCS-80/85 mode requested; only 8086 mode is modelled");
                }
                self.auto_eoi = value & 0x02 != 0;
                self.special_fully_nested = value & 0x10 != 0;
                self.init = InitStep::Ready;
            }
        }
    }

    fn read_command(&self) -> u8 {
        if self.read_isr { self.isr } else { self.irr }
    }
}

/// The PC/AT master + slave 8259A pair with ELCR.
#[derive(Clone, Debug)]
pub struct DualPic {
    chips: [Chip; 2],
}

impl Default for DualPic {
    fn default() -> Self {
        Self::new()
    }
}

impl DualPic {
    /// Power-on state: all inputs masked, vector bases 08h/70h until the BIOS programs them.
    pub fn new() -> DualPic {
        DualPic {
            chips: [Chip::new(true), Chip::new(false)],
        }
    }

    /// Drives ISA interrupt input `line` (0–15) to `level`. IRQ2 is the cascade input and
    /// is ignored here (the PC routes device IRQ2 to IRQ9).
    pub fn set_irq(&mut self, line: u8, level: bool) {
        match line {
            0..=7 if line != CASCADE_LINE => self.chips[0].set_input(line, level),
            8..=15 => {
                self.chips[1].set_input(line - 8, level);
                self.update_cascade();
            }
            _ => {}
        }
    }

    fn update_cascade(&mut self) {
        let slave_int = self.chips[1].pending().is_some();
        self.chips[0].set_input(CASCADE_LINE, slave_int);
        if !slave_int {
            // The cascade is an internal wire: a slave request that went away (line
            // dropped, masked) withdraws the master's request instead of leaving a
            // latched edge that would only yield a spurious IRQ15.
            self.chips[0].irr &= !(1 << CASCADE_LINE);
        }
    }

    /// The master's INT output: the CPU should run an INTA cycle when interrupts are enabled.
    pub fn interrupt_pending(&self) -> bool {
        self.chips[0].pending().is_some()
    }

    /// The INTA cycle: returns the vector to dispatch and moves the request in service.
    pub fn acknowledge(&mut self) -> u8 {
        let vector = match self.chips[0].pending() {
            None => self.chips[0].vector_base | 7,
            Some(line) if line == CASCADE_LINE && !self.chips[0].single => {
                self.chips[0].accept(line);
                match self.chips[1].pending() {
                    Some(slave_line) => {
                        self.chips[1].accept(slave_line);
                        self.chips[1].vector_base | slave_line
                    }
                    None => self.chips[1].vector_base | 7,
                }
            }
            Some(line) => {
                self.chips[0].accept(line);
                self.chips[0].vector_base | line
            }
        };
        self.update_cascade();
        vector
    }

    /// Edge/level configuration, bit n = IRQn level triggered.
    pub fn elcr(&self) -> u16 {
        u16::from(self.chips[0].elcr) | u16::from(self.chips[1].elcr) << 8
    }

    /// Interrupt vector the master (`false`) or slave (`true`) would give for input 0.
    pub fn vector_base(&self, slave: bool) -> u8 {
        self.chips[usize::from(slave)].vector_base
    }

    /// Poll mode read: acknowledges like INTA and reports `0x80 | line` or 0.
    fn poll_read(&mut self, index: usize) -> u8 {
        self.chips[index].poll = false;
        let result = match self.chips[index].pending() {
            Some(line) => {
                self.chips[index].accept(line);
                0x80 | line
            }
            None => 0,
        };
        self.update_cascade();
        result
    }

    fn read_byte(&mut self, port: u16) -> u8 {
        match port {
            0x20 | 0xA0 | 0x21 | 0xA1 => {
                let index = usize::from(port >= 0xA0);
                if self.chips[index].poll {
                    self.poll_read(index)
                } else if port & 1 == 0 {
                    self.chips[index].read_command()
                } else {
                    self.chips[index].imr
                }
            }
            0x4D0 => self.chips[0].elcr,
            0x4D1 => self.chips[1].elcr,
            _ => 0xFF,
        }
    }

    fn write_byte(&mut self, port: u16, value: u8) {
        match port {
            0x20 | 0xA0 => self.chips[usize::from(port >= 0xA0)].write_command(value),
            0x21 | 0xA1 => self.chips[usize::from(port >= 0xA0)].write_data(value),
            0x4D0 | 0x4D1 => {
                let index = usize::from(port == 0x4D1);
                let chip = &mut self.chips[index];
                chip.elcr = value & ELCR_WRITABLE[index];
                // Lines that became level-triggered take the pin level as the request.
                chip.irr = (chip.irr & !chip.elcr) | (chip.levels & chip.elcr);
            }
            _ => {}
        }
        self.update_cascade();
    }
}

impl PortIo for DualPic {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| self.read_byte(p))
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| self.write_byte(p, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The BIOS/Linux init sequence: master at 0x20, slave at 0x28, cascade on IR2.
    fn initialised(icw4: u8) -> DualPic {
        let mut pic = DualPic::new();
        for (cmd, data, base, icw3) in
            [(0x20u16, 0x21u16, 0x20u8, 0x04u8), (0xA0, 0xA1, 0x28, 0x02)]
        {
            pic.io_write(cmd, 1, 0x11);
            pic.io_write(data, 1, u32::from(base));
            pic.io_write(data, 1, u32::from(icw3));
            pic.io_write(data, 1, u32::from(icw4));
            pic.io_write(data, 1, 0x00);
        }
        pic
    }

    fn eoi_master(pic: &mut DualPic) {
        pic.io_write(0x20, 1, 0x20);
    }

    fn pulse(pic: &mut DualPic, line: u8) {
        pic.set_irq(line, true);
        pic.set_irq(line, false);
    }

    #[test]
    fn init_sequence_sets_vectors_and_clears_mask() {
        let mut pic = initialised(0x01);
        assert_eq!(pic.vector_base(false), 0x20);
        assert_eq!(pic.vector_base(true), 0x28);
        assert_eq!(pic.io_read(0x21, 1), 0);
        pic.io_write(0x21, 1, 0xB8);
        assert_eq!(pic.io_read(0x21, 1), 0xB8);
        assert!(!pic.interrupt_pending());
    }

    #[test]
    fn fixed_priority_and_nesting() {
        let mut pic = initialised(0x01);
        pulse(&mut pic, 4);
        pulse(&mut pic, 1);
        assert!(pic.interrupt_pending());
        assert_eq!(pic.acknowledge(), 0x21);
        // IRQ4 has lower priority than IRQ1 in service: it waits.
        assert!(!pic.interrupt_pending());
        // A higher priority request (IRQ0) nests.
        pulse(&mut pic, 0);
        assert_eq!(pic.acknowledge(), 0x20);
        // Read ISR via OCW3.
        pic.io_write(0x20, 1, 0x0B);
        assert_eq!(pic.io_read(0x20, 1), 0b0000_0011);
        eoi_master(&mut pic); // clears IRQ0 (highest in service)
        assert_eq!(pic.io_read(0x20, 1), 0b0000_0010);
        eoi_master(&mut pic);
        assert_eq!(pic.acknowledge(), 0x24);
        // Read IRR: nothing left.
        pic.io_write(0x20, 1, 0x0A);
        assert_eq!(pic.io_read(0x20, 1), 0);
    }

    #[test]
    fn mask_blocks_request_until_unmasked() {
        let mut pic = initialised(0x01);
        pic.io_write(0x21, 1, 0x08);
        pulse(&mut pic, 3);
        assert!(!pic.interrupt_pending());
        pic.io_write(0x20, 1, 0x0A);
        assert_eq!(pic.io_read(0x20, 1), 0x08, "IRR still latched while masked");
        pic.io_write(0x21, 1, 0x00);
        assert_eq!(pic.acknowledge(), 0x23);
    }

    #[test]
    fn cascade_delivers_slave_vector_and_needs_two_eois() {
        let mut pic = initialised(0x01);
        pulse(&mut pic, 12);
        assert!(pic.interrupt_pending());
        assert_eq!(pic.acknowledge(), 0x2C);
        pic.io_write(0xA0, 1, 0x0B);
        assert_eq!(pic.io_read(0xA0, 1), 0x10);
        pic.io_write(0x20, 1, 0x0B);
        assert_eq!(pic.io_read(0x20, 1), 0x04);
        // Slave in service blocks lower master levels (IRQ3) but not IRQ0/1.
        pulse(&mut pic, 3);
        assert!(!pic.interrupt_pending());
        pulse(&mut pic, 1);
        assert_eq!(pic.acknowledge(), 0x21);
        eoi_master(&mut pic); // IRQ1
        pic.io_write(0xA0, 1, 0x20);
        eoi_master(&mut pic); // cascade
        assert_eq!(pic.acknowledge(), 0x23);
    }

    #[test]
    fn slave_priority_within_cascade() {
        let mut pic = initialised(0x01);
        pulse(&mut pic, 15);
        pulse(&mut pic, 8);
        assert_eq!(pic.acknowledge(), 0x28);
        // Without special fully nested mode the master's IR2 in service blocks IRQ15.
        assert!(!pic.interrupt_pending());
        pic.io_write(0xA0, 1, 0x20);
        eoi_master(&mut pic);
        assert_eq!(pic.acknowledge(), 0x2F);
    }

    #[test]
    fn special_fully_nested_lets_higher_slave_irq_nest() {
        let mut pic = initialised(0x11);
        pulse(&mut pic, 10);
        assert_eq!(pic.acknowledge(), 0x2A);
        pulse(&mut pic, 9);
        assert!(pic.interrupt_pending());
        assert_eq!(pic.acknowledge(), 0x29);
        // But a lower slave level still waits for the slave's ISR, and lower master
        // levels wait for the cascade line in service.
        pulse(&mut pic, 11);
        pulse(&mut pic, 5);
        assert!(!pic.interrupt_pending());
    }

    #[test]
    fn spurious_irq7_when_request_vanishes() {
        let mut pic = initialised(0x01);
        pic.io_write(0x4D0, 1, 0x20); // IRQ5 level triggered
        pic.set_irq(5, true);
        assert!(pic.interrupt_pending());
        pic.set_irq(5, false);
        assert_eq!(pic.acknowledge(), 0x27);
        pic.io_write(0x20, 1, 0x0B);
        assert_eq!(pic.io_read(0x20, 1), 0, "spurious vector sets no ISR bit");
    }

    #[test]
    fn spurious_irq15_from_slave() {
        let mut pic = initialised(0x01);
        pic.io_write(0x4D1, 1, 0x08); // IRQ11 level
        pic.set_irq(11, true);
        assert!(pic.interrupt_pending());
        // Mask on the slave after the master saw the request: INTA finds nothing there.
        pic.chips[1].imr = 0x08;
        assert_eq!(pic.acknowledge(), 0x2F);
        pic.io_write(0x20, 1, 0x0B);
        assert_eq!(
            pic.io_read(0x20, 1),
            0x04,
            "master still accepted the cascade"
        );
    }

    #[test]
    fn level_triggered_request_persists_until_line_drops() {
        let mut pic = initialised(0x01);
        pic.io_write(0x4D1, 1, 0xFF);
        assert_eq!(
            pic.io_read(0x4D1, 1),
            0xDE,
            "IRQ8 and IRQ13 cannot be level"
        );
        pic.io_write(0x4D0, 1, 0xFF);
        assert_eq!(pic.io_read(0x4D0, 1), 0xF8);
        assert_eq!(pic.elcr(), 0xDEF8);
        pic.set_irq(11, true);
        assert_eq!(pic.acknowledge(), 0x2B);
        pic.io_write(0xA0, 1, 0x20);
        eoi_master(&mut pic);
        assert!(pic.interrupt_pending(), "line still high: requests again");
        assert_eq!(pic.acknowledge(), 0x2B);
        pic.io_write(0xA0, 1, 0x20);
        eoi_master(&mut pic);
        pic.set_irq(11, false);
        assert!(!pic.interrupt_pending());
    }

    #[test]
    fn edge_needs_a_new_rising_edge() {
        let mut pic = initialised(0x01);
        pic.set_irq(4, true);
        assert_eq!(pic.acknowledge(), 0x24);
        eoi_master(&mut pic);
        pic.set_irq(4, true); // still high: no new edge
        assert!(!pic.interrupt_pending());
        pic.set_irq(4, false);
        pic.set_irq(4, true);
        assert_eq!(pic.acknowledge(), 0x24);
    }

    #[test]
    fn auto_eoi_leaves_isr_clear() {
        let mut pic = initialised(0x03);
        pulse(&mut pic, 5);
        assert_eq!(pic.acknowledge(), 0x25);
        pic.io_write(0x20, 1, 0x0B);
        assert_eq!(pic.io_read(0x20, 1), 0);
        pulse(&mut pic, 6);
        assert_eq!(pic.acknowledge(), 0x26, "no EOI needed before the next one");
    }

    #[test]
    fn rotation_on_non_specific_eoi_and_set_priority() {
        let mut pic = initialised(0x01);
        pulse(&mut pic, 3);
        assert_eq!(pic.acknowledge(), 0x23);
        pic.io_write(0x20, 1, 0xA0); // rotate on non-specific EOI: IRQ3 becomes lowest
        pulse(&mut pic, 3);
        pulse(&mut pic, 5);
        assert_eq!(pic.acknowledge(), 0x25, "IRQ4 is now the highest priority");
        pic.io_write(0x20, 1, 0x20);
        assert_eq!(pic.acknowledge(), 0x23);
        pic.io_write(0x20, 1, 0x20);
        // Set priority: IRQ6 lowest, so IRQ7 highest.
        pic.io_write(0x20, 1, 0xC6);
        pulse(&mut pic, 0);
        pulse(&mut pic, 7);
        assert_eq!(pic.acknowledge(), 0x27);
        // Rotate on specific EOI for IRQ7: IRQ0 becomes highest.
        pic.io_write(0x20, 1, 0xE7);
        assert_eq!(pic.acknowledge(), 0x20);
    }

    #[test]
    fn rotate_in_auto_eoi_mode() {
        let mut pic = initialised(0x03);
        pic.io_write(0x20, 1, 0x80);
        pulse(&mut pic, 1);
        assert_eq!(pic.acknowledge(), 0x21);
        pulse(&mut pic, 0);
        pulse(&mut pic, 2 + 1);
        assert_eq!(
            pic.acknowledge(),
            0x23,
            "IRQ1 lowest after rotation, so IRQ2.. first"
        );
    }

    #[test]
    fn special_mask_mode_enables_lower_levels() {
        let mut pic = initialised(0x01);
        pulse(&mut pic, 1);
        assert_eq!(pic.acknowledge(), 0x21);
        pulse(&mut pic, 6);
        assert!(!pic.interrupt_pending());
        pic.io_write(0x21, 1, 0x02); // mask own level
        pic.io_write(0x20, 1, 0x68); // set special mask
        assert_eq!(pic.acknowledge(), 0x26);
        pic.io_write(0x20, 1, 0x48); // reset special mask
        pulse(&mut pic, 7);
        assert!(!pic.interrupt_pending());
    }

    #[test]
    fn poll_mode_reads_and_acknowledges() {
        let mut pic = initialised(0x01);
        pic.io_write(0x20, 1, 0x0C);
        assert_eq!(pic.io_read(0x20, 1), 0x00);
        pulse(&mut pic, 6);
        pic.io_write(0x20, 1, 0x0C);
        assert_eq!(pic.io_read(0x20, 1), 0x86);
        pic.io_write(0x20, 1, 0x0B);
        assert_eq!(pic.io_read(0x20, 1), 0x40, "poll sets ISR like INTA");
    }

    #[test]
    fn word_access_splits_into_bytes() {
        let mut pic = initialised(0x01);
        pic.io_write(0x20, 1, 0x0A);
        pic.io_write(0x21, 1, 0x5A);
        assert_eq!(pic.io_read(0x20, 2), 0x5A00);
        assert_eq!(pic.io_read(0x4D0, 2), 0);
        assert_eq!(pic.io_read(0x22, 1), 0xFF);
    }

    #[test]
    fn out_of_range_lines_are_ignored() {
        let mut pic = initialised(0x01);
        pic.set_irq(2, true);
        pic.set_irq(16, true);
        pic.set_irq(255, true);
        assert!(!pic.interrupt_pending());
    }
}
