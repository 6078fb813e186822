//! National Semiconductor 16550A UART (COM1 at 0x3F8, IRQ4 on a PC).
//!
//! Follows the PC16550D datasheet: divisor latch (DLAB), IER, IIR with interrupt priority
//! (line status > received data / character timeout > THR empty > modem status), FCR with
//! 16-byte FIFOs and trigger levels, LCR, MCR with loopback, LSR, MSR with delta bits and
//! the scratch register. On a PC the MCR OUT2 bit gates the interrupt onto the ISA bus.
//!
//! Transmission is instantaneous (no baud-rate timing): a byte written to THR is appended
//! to the output buffer the machine drains with [`Serial::take_output`], and THR is empty
//! again at once, raising the THRE interrupt as a real UART does when its shift register
//! takes the byte. THRE semantics follow the datasheet because Linux's 8250 driver tests
//! them: the THRE interrupt is (re)asserted when THR becomes empty and when ETBEI is set
//! while THR is empty, and cleared by writing THR or reading IIR while it is the source.
//!
//! Received bytes wait in a host-side queue and move into the receiver FIFO as space frees
//! up, so a slow guest never sees an overrun. With FIFOs on, data below the trigger level
//! reports a character timeout at once (the real chip waits four character times).

use std::collections::VecDeque;

use super::{PortIo, read_bytes, write_bytes};

/// Standard PC COM port bases.
pub const COM1_BASE: u16 = 0x3F8;
pub const COM2_BASE: u16 = 0x2F8;

const FIFO_SIZE: usize = 16;
/// Output kept for the machine to drain; more is dropped (guest-controlled growth).
const MAX_OUTPUT: usize = 1 << 20;
/// Host bytes waiting for the receiver.
const MAX_INPUT: usize = 1 << 16;

const IER_RDA: u8 = 0x01;
const IER_THRE: u8 = 0x02;
const IER_RLS: u8 = 0x04;
const IER_MSI: u8 = 0x08;

const IIR_NONE: u8 = 0x01;
const IIR_MSI: u8 = 0x00;
const IIR_THRE: u8 = 0x02;
const IIR_RDA: u8 = 0x04;
const IIR_RLS: u8 = 0x06;
const IIR_TIMEOUT: u8 = 0x0C;
const IIR_FIFO_ON: u8 = 0xC0;

const LCR_DLAB: u8 = 0x80;

const MCR_DTR: u8 = 0x01;
const MCR_RTS: u8 = 0x02;
const MCR_OUT1: u8 = 0x04;
const MCR_OUT2: u8 = 0x08;
const MCR_LOOP: u8 = 0x10;

const LSR_DR: u8 = 0x01;
const LSR_OE: u8 = 0x02;
const LSR_BI: u8 = 0x10;
const LSR_THRE: u8 = 0x20;
const LSR_TEMT: u8 = 0x40;
const LSR_ERRORS: u8 = 0x1E;

const MSR_CTS: u8 = 0x10;
const MSR_DSR: u8 = 0x20;
const MSR_RI: u8 = 0x40;
const MSR_DCD: u8 = 0x80;

/// A 16550A UART.
#[derive(Clone, Debug)]
pub struct Serial {
    base: u16,
    divisor: u16,
    ier: u8,
    lcr: u8,
    mcr: u8,
    /// Error bits of LSR (OE/PE/FE/BI), cleared by reading LSR.
    lsr_errors: u8,
    /// Modem status inputs (bits 4–7) plus latched delta bits (0–3).
    msr: u8,
    scratch: u8,
    fifo_enabled: bool,
    rx_trigger: usize,
    rx_fifo: VecDeque<u8>,
    host_input: VecDeque<u8>,
    output: Vec<u8>,
    output_dropped: bool,
    thre_pending: bool,
}

impl Serial {
    /// A UART at `base` (e.g. [`COM1_BASE`]) with its modem lines showing a connected peer.
    pub fn new(base: u16) -> Serial {
        Serial {
            base,
            divisor: 12, // 9600 baud, a common firmware default
            ier: 0,
            lcr: 0x03,
            mcr: 0,
            lsr_errors: 0,
            msr: MSR_DCD | MSR_DSR | MSR_CTS,
            scratch: 0,
            fifo_enabled: false,
            rx_trigger: 1,
            rx_fifo: VecDeque::with_capacity(FIFO_SIZE),
            host_input: VecDeque::new(),
            output: Vec::new(),
            output_dropped: false,
            thre_pending: false,
        }
    }

    /// RESET#: the registers return to their power-on values (interrupts off, FIFO off);
    /// what was already sent stays in the output and host input stays queued.
    pub fn reset(&mut self) {
        let output = std::mem::take(&mut self.output);
        let host_input = std::mem::take(&mut self.host_input);
        let dropped = self.output_dropped;
        *self = Serial::new(self.base);
        self.output = output;
        self.host_input = host_input;
        self.output_dropped = dropped;
    }

    /// First port of the 8-port register block.
    pub fn base(&self) -> u16 {
        self.base
    }

    /// Bytes the guest transmitted since the last call.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.output)
    }

    /// Queues bytes from the host for the guest to receive (beyond 64 KiB they are dropped).
    pub fn receive(&mut self, bytes: &[u8]) {
        let room = MAX_INPUT.saturating_sub(self.host_input.len());
        if bytes.len() > room {
            tracing::warn!(
                dropped = bytes.len() - room,
                "serial: host input queue full"
            );
        }
        self.host_input.extend(bytes.iter().take(room));
        self.refill_rx();
    }

    /// Baud rate programmed by the guest (115200 / divisor; 0 when the divisor is 0).
    pub fn baud_rate(&self) -> u32 {
        if self.divisor == 0 {
            0
        } else {
            115_200 / u32::from(self.divisor)
        }
    }

    /// IRQ line level: an interrupt is pending and OUT2 routes it to the bus.
    pub fn irq_level(&self) -> bool {
        self.mcr & MCR_OUT2 != 0 && self.mcr & MCR_LOOP == 0 && self.interrupt_id() != IIR_NONE
    }

    fn rx_capacity(&self) -> usize {
        if self.fifo_enabled { FIFO_SIZE } else { 1 }
    }

    fn refill_rx(&mut self) {
        if self.mcr & MCR_LOOP != 0 {
            return; // the receiver is disconnected from the line in loopback
        }
        while self.rx_fifo.len() < self.rx_capacity() {
            match self.host_input.pop_front() {
                Some(byte) => self.rx_fifo.push_back(byte),
                None => break,
            }
        }
    }

    /// A byte arriving at the receiver (from the line or the loopback path).
    fn push_rx(&mut self, byte: u8) {
        if self.rx_fifo.len() >= self.rx_capacity() {
            self.lsr_errors |= LSR_OE; // the shift register overwrote nothing stored
            return;
        }
        self.rx_fifo.push_back(byte);
    }

    fn interrupt_id(&self) -> u8 {
        if self.ier & IER_RLS != 0 && self.lsr_errors & LSR_ERRORS != 0 {
            return IIR_RLS;
        }
        if self.ier & IER_RDA != 0 && !self.rx_fifo.is_empty() {
            let below_trigger = self.fifo_enabled && self.rx_fifo.len() < self.rx_trigger;
            return if below_trigger { IIR_TIMEOUT } else { IIR_RDA };
        }
        if self.ier & IER_THRE != 0 && self.thre_pending {
            return IIR_THRE;
        }
        if self.ier & IER_MSI != 0 && self.msr & 0x0F != 0 {
            return IIR_MSI;
        }
        IIR_NONE
    }

    fn modem_inputs(&self) -> u8 {
        if self.mcr & MCR_LOOP == 0 {
            return self.msr & 0xF0;
        }
        // Loopback wires the modem outputs back to the inputs.
        let mut inputs = 0;
        if self.mcr & MCR_RTS != 0 {
            inputs |= MSR_CTS;
        }
        if self.mcr & MCR_DTR != 0 {
            inputs |= MSR_DSR;
        }
        if self.mcr & MCR_OUT1 != 0 {
            inputs |= MSR_RI;
        }
        if self.mcr & MCR_OUT2 != 0 {
            inputs |= MSR_DCD;
        }
        inputs
    }

    /// Records modem input changes as MSR delta bits (RI reports only a trailing edge).
    fn set_modem_inputs(&mut self, new: u8) {
        let old = self.msr & 0xF0;
        let changed = old ^ new;
        let mut delta = self.msr & 0x0F;
        if changed & MSR_CTS != 0 {
            delta |= 0x01;
        }
        if changed & MSR_DSR != 0 {
            delta |= 0x02;
        }
        if old & MSR_RI != 0 && new & MSR_RI == 0 {
            delta |= 0x04;
        }
        if changed & MSR_DCD != 0 {
            delta |= 0x08;
        }
        self.msr = new | delta;
    }

    fn write_mcr(&mut self, value: u8) {
        let was_loop = self.mcr & MCR_LOOP != 0;
        self.mcr = value & 0x1F;
        if was_loop || self.mcr & MCR_LOOP != 0 {
            let inputs = if self.mcr & MCR_LOOP != 0 {
                self.modem_inputs()
            } else {
                MSR_DCD | MSR_DSR | MSR_CTS
            };
            self.set_modem_inputs(inputs);
        }
        if was_loop && self.mcr & MCR_LOOP == 0 {
            self.refill_rx();
        }
    }

    fn write_fcr(&mut self, value: u8) {
        let enable = value & 0x01 != 0;
        if enable != self.fifo_enabled {
            self.rx_fifo.clear();
        }
        self.fifo_enabled = enable;
        if value & 0x02 != 0 {
            self.rx_fifo.clear();
        }
        // TX FIFO clear (bit 2) has nothing to do: transmission is instantaneous.
        self.rx_trigger = match value >> 6 {
            0 => 1,
            1 => 4,
            2 => 8,
            _ => 14,
        };
        self.refill_rx();
    }

    fn transmit(&mut self, byte: u8) {
        if self.mcr & MCR_LOOP != 0 {
            self.push_rx(byte);
        } else if self.output.len() < MAX_OUTPUT {
            self.output.push(byte);
        } else if !self.output_dropped {
            self.output_dropped = true;
            tracing::warn!("serial: output buffer full, dropping bytes until drained");
        }
        // The shift register took the byte: THR is empty again.
        self.thre_pending = true;
    }

    fn read_register(&mut self, offset: u16) -> u8 {
        let dlab = self.lcr & LCR_DLAB != 0;
        match offset {
            0 if dlab => self.divisor as u8,
            0 => {
                let byte = self.rx_fifo.pop_front().unwrap_or(0);
                self.refill_rx();
                byte
            }
            1 if dlab => (self.divisor >> 8) as u8,
            1 => self.ier,
            2 => {
                let id = self.interrupt_id();
                if id == IIR_THRE {
                    self.thre_pending = false;
                }
                id | if self.fifo_enabled { IIR_FIFO_ON } else { 0 }
            }
            3 => self.lcr,
            4 => self.mcr,
            5 => {
                let mut lsr = self.lsr_errors | LSR_THRE | LSR_TEMT;
                if !self.rx_fifo.is_empty() {
                    lsr |= LSR_DR;
                }
                if self.fifo_enabled && self.lsr_errors & (LSR_ERRORS & !LSR_OE) != 0 {
                    lsr |= 0x80;
                }
                self.lsr_errors = 0;
                lsr
            }
            6 => {
                let value = self.modem_inputs() | (self.msr & 0x0F);
                self.msr &= 0xF0;
                value
            }
            _ => self.scratch,
        }
    }

    fn write_register(&mut self, offset: u16, value: u8) {
        let dlab = self.lcr & LCR_DLAB != 0;
        match offset {
            0 if dlab => self.divisor = (self.divisor & 0xFF00) | u16::from(value),
            0 => {
                self.thre_pending = false;
                self.transmit(value);
            }
            1 if dlab => self.divisor = (self.divisor & 0x00FF) | u16::from(value) << 8,
            1 => {
                let enabling_thre = value & IER_THRE != 0 && self.ier & IER_THRE == 0;
                self.ier = value & 0x0F;
                if enabling_thre {
                    // THR is always empty here: a real 16550 raises THRE at once.
                    self.thre_pending = true;
                }
            }
            2 => self.write_fcr(value),
            3 => self.lcr = value,
            4 => self.write_mcr(value),
            5 | 6 => {} // LSR/MSR writes are factory test registers
            _ => self.scratch = value,
        }
    }

    /// Simulates a break condition on the receive line (BI + a zero byte).
    pub fn receive_break(&mut self) {
        self.lsr_errors |= LSR_BI;
        self.push_rx(0);
    }
}

impl PortIo for Serial {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| match p.wrapping_sub(self.base) {
            offset @ 0..=7 => self.read_register(offset),
            _ => 0xFF,
        })
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| {
            if let offset @ 0..=7 = p.wrapping_sub(self.base) {
                self.write_register(offset, v);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u16 = COM1_BASE;

    fn uart() -> Serial {
        Serial::new(BASE)
    }

    fn rd(uart: &mut Serial, offset: u16) -> u8 {
        uart.io_read(BASE + offset, 1) as u8
    }

    fn wr(uart: &mut Serial, offset: u16, value: u8) {
        uart.io_write(BASE + offset, 1, u32::from(value));
    }

    #[test]
    fn divisor_latch_and_scratch() {
        let mut u = uart();
        wr(&mut u, 3, 0x83);
        wr(&mut u, 0, 0x01);
        wr(&mut u, 1, 0x00);
        assert_eq!(u.baud_rate(), 115_200);
        assert_eq!(rd(&mut u, 0), 0x01);
        wr(&mut u, 3, 0x03);
        assert_eq!(rd(&mut u, 1), 0x00, "IER, not DLM");
        wr(&mut u, 7, 0x5A);
        assert_eq!(rd(&mut u, 7), 0x5A);
        assert!(u.take_output().is_empty(), "DLL writes are not data");
        assert_eq!(u.io_read(BASE + 8, 1), 0xFF);
    }

    #[test]
    fn transmit_goes_to_output_buffer() {
        let mut u = uart();
        assert_eq!(rd(&mut u, 5), LSR_THRE | LSR_TEMT);
        for &b in b"Linux" {
            wr(&mut u, 0, b);
        }
        assert_eq!(u.take_output(), b"Linux");
        assert!(u.take_output().is_empty());
    }

    #[test]
    fn thre_interrupt_semantics_match_linux_probe() {
        let mut u = uart();
        wr(&mut u, 4, MCR_OUT2 | MCR_DTR | MCR_RTS);
        assert_eq!(rd(&mut u, 2), IIR_NONE);
        // Enabling ETBEI with THR empty asserts THRE at once.
        wr(&mut u, 1, IER_THRE);
        assert!(u.irq_level());
        assert_eq!(rd(&mut u, 2), IIR_THRE);
        // Reading IIR cleared it.
        assert_eq!(rd(&mut u, 2), IIR_NONE);
        assert!(!u.irq_level());
        // Re-enabling re-asserts (Linux's UART_BUG_THRE test).
        wr(&mut u, 1, 0);
        wr(&mut u, 1, IER_THRE);
        assert_eq!(rd(&mut u, 2), IIR_THRE);
        // Writing THR: byte sent, THR empty again -> THRE again.
        wr(&mut u, 0, b'x');
        assert!(u.irq_level());
        assert_eq!(rd(&mut u, 2), IIR_THRE);
        wr(&mut u, 1, 0);
        assert!(!u.irq_level());
    }

    #[test]
    fn out2_gates_the_irq_line() {
        let mut u = uart();
        wr(&mut u, 1, IER_THRE);
        assert!(!u.irq_level(), "OUT2 clear");
        wr(&mut u, 4, MCR_OUT2);
        assert!(u.irq_level());
    }

    #[test]
    fn receive_without_fifo() {
        let mut u = uart();
        wr(&mut u, 4, MCR_OUT2);
        wr(&mut u, 1, IER_RDA);
        u.receive(b"ab");
        assert!(u.irq_level());
        assert_eq!(rd(&mut u, 2), IIR_RDA);
        assert_eq!(rd(&mut u, 5), LSR_DR | LSR_THRE | LSR_TEMT);
        assert_eq!(rd(&mut u, 0), b'a');
        assert_eq!(
            rd(&mut u, 0),
            b'b',
            "next byte moved in from the host queue"
        );
        assert_eq!(rd(&mut u, 5) & LSR_DR, 0);
        assert_eq!(rd(&mut u, 2), IIR_NONE);
        assert_eq!(rd(&mut u, 0), 0);
    }

    #[test]
    fn fifo_trigger_level_and_timeout() {
        let mut u = uart();
        wr(&mut u, 1, IER_RDA);
        wr(&mut u, 2, 0x81); // enable FIFO, trigger 8
        assert_eq!(rd(&mut u, 2), IIR_FIFO_ON | IIR_NONE);
        u.receive(b"1234");
        assert_eq!(rd(&mut u, 2), IIR_FIFO_ON | IIR_TIMEOUT);
        u.receive(b"5678901234567890");
        assert_eq!(rd(&mut u, 2), IIR_FIFO_ON | IIR_RDA);
        let received: Vec<u8> = (0..20).map(|_| rd(&mut u, 0)).collect();
        assert_eq!(received, b"12345678901234567890");
        assert_eq!(rd(&mut u, 5) & LSR_DR, 0);
        // FIFO reset clears pending data.
        u.receive(b"zz");
        wr(&mut u, 2, 0x83);
        assert_eq!(rd(&mut u, 5) & LSR_DR, 0);
    }

    #[test]
    fn loopback_echoes_and_maps_modem_lines() {
        let mut u = uart();
        wr(&mut u, 4, MCR_LOOP | MCR_RTS | MCR_OUT2);
        assert_eq!(
            rd(&mut u, 6) & 0xF0,
            MSR_CTS | MSR_DCD,
            "Linux's loopback check value 0x90"
        );
        wr(&mut u, 0, 0x55);
        assert!(u.take_output().is_empty());
        assert_eq!(rd(&mut u, 5) & LSR_DR, LSR_DR);
        assert_eq!(rd(&mut u, 0), 0x55);
        // Overrun in loopback without FIFO.
        wr(&mut u, 0, 1);
        wr(&mut u, 0, 2);
        assert_eq!(rd(&mut u, 5) & (LSR_OE | LSR_DR), LSR_OE | LSR_DR);
        assert_eq!(rd(&mut u, 5) & LSR_OE, 0, "LSR read clears errors");
        assert!(!u.irq_level(), "IRQ not driven in loopback");
    }

    #[test]
    fn modem_status_deltas_and_interrupt_priority() {
        let mut u = uart();
        wr(&mut u, 4, MCR_LOOP);
        wr(&mut u, 1, IER_MSI | IER_RLS | IER_RDA);
        assert_eq!(rd(&mut u, 2), IIR_MSI, "loopback dropped CTS/DSR/DCD");
        assert_eq!(rd(&mut u, 6), 0x0B);
        // Leaving loopback brings the peer's lines back: delta bits again.
        wr(&mut u, 4, MCR_OUT2);
        assert!(u.irq_level());
        assert_eq!(rd(&mut u, 6), MSR_DCD | MSR_DSR | MSR_CTS | 0x0B);
        assert_eq!(rd(&mut u, 6) & 0x0F, 0, "read clears deltas");
        assert!(!u.irq_level());
        wr(&mut u, 1, IER_MSI | IER_THRE | IER_RLS | IER_RDA);
        // Priority: line status over data over THRE.
        u.receive_break();
        assert_eq!(rd(&mut u, 2), IIR_RLS);
        assert_eq!(rd(&mut u, 5) & (LSR_BI | LSR_DR), LSR_BI | LSR_DR);
        assert_eq!(rd(&mut u, 2), IIR_RDA);
        rd(&mut u, 0);
        assert_eq!(rd(&mut u, 2), IIR_THRE);
        assert_eq!(rd(&mut u, 2), IIR_NONE);
    }

    #[test]
    fn ier_reads_back_low_nibble_only() {
        let mut u = uart();
        wr(&mut u, 1, 0xFF);
        assert_eq!(rd(&mut u, 1), 0x0F);
        wr(&mut u, 2, 0x21); // 16750 64-byte FIFO bit: not a 16750
        assert_eq!(rd(&mut u, 2) & 0x20, 0);
    }

    /// The probe Linux's 8250 driver runs (autoconfig): scratch, IER, LOOP/MSR, FIFO
    /// detection, EFR and 16750 checks must all conclude "16550A".
    #[test]
    fn linux_8250_autoconfig_sees_a_16550a() {
        let mut u = uart();
        // Scratch and IER tests.
        wr(&mut u, 7, 0xA5);
        assert_eq!(rd(&mut u, 7), 0xA5);
        wr(&mut u, 1, 0);
        assert_eq!(rd(&mut u, 1) & 0x0F, 0);
        wr(&mut u, 1, 0x0F);
        assert_eq!(rd(&mut u, 1) & 0x0F, 0x0F);
        wr(&mut u, 1, 0);
        // Loopback check: MCR = LOOP | OUT2 | RTS → MSR high nibble 0x90.
        wr(&mut u, 4, 0x1A);
        assert_eq!(rd(&mut u, 6) & 0xF0, 0x90);
        wr(&mut u, 4, 0);
        // FIFO: IIR bits 7:6 = 11 after enabling.
        wr(&mut u, 2, 0x01);
        assert_eq!(rd(&mut u, 2) >> 6, 3);
        // EFR probes (LCR = 0xBF, then 0x80): offset 2 must not read 0.
        wr(&mut u, 3, 0xBF);
        assert_ne!(rd(&mut u, 2), 0);
        wr(&mut u, 3, 0x80);
        assert_ne!(rd(&mut u, 2), 0);
        // 16750: 64-byte FIFO bit never reads back in IIR bit 5.
        wr(&mut u, 2, 0x21);
        assert_eq!((rd(&mut u, 2) >> 5) & 1, 0);
        wr(&mut u, 3, 0x00);
        wr(&mut u, 2, 0x21);
        assert_eq!((rd(&mut u, 2) >> 5) & 1, 0);
        // XScale UUE bit (IER bit 6) does not stick.
        wr(&mut u, 1, 0x40);
        assert_eq!(rd(&mut u, 1) & 0x40, 0);
        // LSR never reads 0xFF (the "LSR safety check").
        assert_ne!(rd(&mut u, 5), 0xFF);
    }

    #[test]
    fn output_and_input_are_bounded() {
        let mut u = uart();
        for _ in 0..(MAX_OUTPUT + 10) {
            wr(&mut u, 0, b'.');
        }
        assert_eq!(u.take_output().len(), MAX_OUTPUT);
        u.receive(&vec![0u8; MAX_INPUT + 100]);
        assert_eq!(u.host_input.len() + u.rx_fifo.len(), MAX_INPUT);
    }
}
