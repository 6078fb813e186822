//! The 82540EM as Linux's e1000 driver programs it: EEPROM bit-banging, PHY access,
//! transmit (legacy, checksum offload, TSO), receive, interrupts, hostile rings.

use super::*;
use crate::devices::test_ram::Ram;
use crate::net::LoopbackBackend;

fn nic() -> (E1000, LoopbackBackend, Ram) {
    let backend = LoopbackBackend::new();
    let mut nic = E1000::new(DEFAULT_MAC, Box::new(backend.clone()));
    nic.config_mut().write(0x04, 2, 0x0007);
    (nic, backend, Ram(vec![0; 1 << 20]))
}

fn rd(nic: &mut E1000, offset: u32) -> u32 {
    nic.bar_read(0, u64::from(offset), 4) as u32
}

fn wr(nic: &mut E1000, offset: u32, value: u32) {
    nic.bar_write(0, u64::from(offset), 4, u64::from(value));
}

/// Reads one EEPROM word the way Linux's e1000_read_eeprom does on a Microwire part.
fn eeprom_bitbang(nic: &mut E1000, word: u32) -> u16 {
    let eecd = rd(nic, EECD);
    wr(nic, EECD, eecd | EECD_REQ);
    assert_ne!(rd(nic, EECD) & EECD_GNT, 0, "EEPROM access not granted");
    let base = EECD_REQ;
    wr(nic, EECD, base | EECD_CS);
    let shift_out = |nic: &mut E1000, value: u32, bits: u32| {
        for i in (0..bits).rev() {
            let di = if value >> i & 1 != 0 { EECD_DI } else { 0 };
            wr(nic, EECD, base | EECD_CS | di);
            wr(nic, EECD, base | EECD_CS | di | EECD_SK);
            wr(nic, EECD, base | EECD_CS | di);
        }
    };
    shift_out(nic, EEPROM_READ_OPCODE, 3);
    shift_out(nic, word, 6);
    let mut data = 0u16;
    for _ in 0..16 {
        data <<= 1;
        wr(nic, EECD, base | EECD_CS | EECD_SK);
        if rd(nic, EECD) & EECD_DO != 0 {
            data |= 1;
        }
        wr(nic, EECD, base | EECD_CS);
    }
    wr(nic, EECD, base);
    wr(nic, EECD, 0);
    data
}

#[test]
fn eeprom_reads_by_bitbanging_and_eerd_and_checksums() {
    let (mut nic, _, _) = nic();
    assert_ne!(rd(&mut nic, EECD) & EECD_PRES, 0);
    let words: Vec<u16> = (0..64).map(|w| eeprom_bitbang(&mut nic, w)).collect();
    assert_eq!(
        &words[..3],
        &[0x5452, 0x1200, 0x5634],
        "MAC 52:54:00:12:34:56"
    );
    assert_eq!(
        words.iter().fold(0u16, |s, &w| s.wrapping_add(w)),
        0xBABA,
        "Linux's checksum rule"
    );
    assert_eq!(words[0x0E], VENDOR_ID);
    wr(&mut nic, EERD, 1 << 8 | EERD_START);
    let eerd = rd(&mut nic, EERD);
    assert_ne!(eerd & EERD_DONE, 0);
    assert_eq!(eerd >> 16, 0x1200);
}

fn mdic_read(nic: &mut E1000, register: u32) -> u16 {
    wr(nic, MDIC, MDIC_OP_READ | PHY_ADDRESS << 21 | register << 16);
    let v = rd(nic, MDIC);
    assert_ne!(v & MDIC_READY, 0);
    assert_eq!(v & MDIC_ERROR, 0);
    v as u16
}

#[test]
fn phy_reports_m88_link_up_and_autoneg_done() {
    let (mut nic, _, _) = nic();
    let id = u32::from(mdic_read(&mut nic, 2)) << 16 | u32::from(mdic_read(&mut nic, 3));
    assert_eq!(id & 0xFFFF_FFF0, 0x0141_0C20, "M88E1011");
    // Restart autonegotiation: the bit self-clears, status says complete with link.
    wr(&mut nic, MDIC, MDIC_OP_WRITE | PHY_ADDRESS << 21 | 0x1340);
    assert_eq!(mdic_read(&mut nic, 0) & 0x0200, 0);
    let bmsr = mdic_read(&mut nic, 1);
    assert_eq!(bmsr & 0x24, 0x24, "link up + autoneg complete");
    // Another PHY address answers with the error bit.
    wr(&mut nic, MDIC, MDIC_OP_READ | 2 << 21 | 1 << 16);
    assert_ne!(rd(&mut nic, MDIC) & MDIC_ERROR, 0);
    let status = rd(&mut nic, STATUS);
    assert_eq!(
        status & (STATUS_LU | STATUS_FD | 0xC0),
        STATUS_LU | STATUS_FD | STATUS_SPEED_1000
    );
    // Pulling the cable: link down and a link status change interrupt.
    wr(&mut nic, IMS, ICR_LSC);
    rd(&mut nic, ICR);
    nic.set_link(false);
    assert_eq!(rd(&mut nic, STATUS) & STATUS_LU, 0);
    assert!(nic.irq_level());
    assert_eq!(rd(&mut nic, ICR) & ICR_LSC, ICR_LSC);
    assert!(!nic.irq_level(), "ICR read clears");
    nic.set_link(true);
    assert_ne!(rd(&mut nic, STATUS) & STATUS_LU, 0);
    assert_ne!(mdic_read(&mut nic, 1) & 0x04, 0);
}

#[test]
fn ctrl_reset_restores_defaults() {
    let (mut nic, _, _) = nic();
    wr(&mut nic, IMS, 0xFF);
    wr(&mut nic, RCTL, RCTL_EN);
    wr(&mut nic, CTRL, CTRL_RST);
    assert_eq!(rd(&mut nic, IMS), 0);
    assert_eq!(rd(&mut nic, RCTL), 0);
    assert_eq!(rd(&mut nic, CTRL) & CTRL_RST, 0, "self-clearing");
    // Receive address 0 holds the EEPROM's MAC, valid.
    assert_eq!(rd(&mut nic, RA), 0x1200_5452);
    assert_eq!(rd(&mut nic, RA + 4), 0x8000_5634);
}

const TX_RING: u64 = 0x1000;
const RX_RING: u64 = 0x2000;

fn setup_tx(nic: &mut E1000, descriptors: u32) {
    wr(nic, TDBAL, TX_RING as u32);
    wr(nic, TDBAH, 0);
    wr(nic, TDLEN, descriptors * 16);
    wr(nic, TDH, 0);
    wr(nic, TDT, 0);
    wr(nic, TCTL, TCTL_EN);
}

fn put_descriptor(ram: &mut Ram, ring: u64, index: u32, d: [u8; 16]) {
    ram.write(ring + u64::from(index) * 16, &d).unwrap();
}

fn legacy_tx(buffer: u64, len: u16, cmd: u8) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&buffer.to_le_bytes());
    d[8..10].copy_from_slice(&len.to_le_bytes());
    d[11] = cmd;
    d
}

#[test]
fn legacy_transmit_gathers_descriptors_and_reports_done() {
    let (mut nic, backend, mut ram) = nic();
    setup_tx(&mut nic, 8);
    ram.write(0x10000, &[0xAA; 20]).unwrap();
    ram.write(0x11000, &[0xBB; 50]).unwrap();
    put_descriptor(&mut ram, TX_RING, 0, legacy_tx(0x10000, 20, 0));
    put_descriptor(
        &mut ram,
        TX_RING,
        1,
        legacy_tx(0x11000, 50, TXD_CMD_EOP | TXD_CMD_RS),
    );
    wr(&mut nic, IMS, ICR_TXDW);
    wr(&mut nic, TDT, 2);
    assert!(nic.dma_pending());
    nic.run_dma(&mut ram, 0);
    let sent = backend.take_sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].len(), 70);
    assert_eq!(&sent[0][18..22], &[0xAA, 0xAA, 0xBB, 0xBB]);
    assert_eq!(rd(&mut nic, TDH), 2);
    assert_eq!(ram.0[(TX_RING + 16 + 12) as usize] & TXD_STA_DD, TXD_STA_DD);
    assert!(nic.irq_level());
    assert_eq!(
        rd(&mut nic, ICR) & (ICR_TXDW | ICR_TXQE),
        ICR_TXDW | ICR_TXQE
    );
    assert!(!nic.dma_pending());
    assert_eq!(rd(&mut nic, GPTC), 1);
    assert_eq!(rd(&mut nic, GPTC), 0, "statistics clear on read");
}

/// Ethernet + IPv4 + TCP header (54 bytes) and `payload`, TCP checksum seeded with the
/// pseudo-header sum without length as Linux does for TSO.
fn tcp_packet(payload: &[u8], seq: u32, flags: u8) -> Vec<u8> {
    let mut p = vec![0u8; 54];
    p[12] = 0x08; // IPv4
    p[14] = 0x45;
    p[22] = 64;
    p[23] = 6;
    p[26..30].copy_from_slice(&[10, 0, 2, 15]);
    p[30..34].copy_from_slice(&[10, 0, 2, 2]);
    p[34..36].copy_from_slice(&1234u16.to_be_bytes());
    p[36..38].copy_from_slice(&80u16.to_be_bytes());
    p[38..42].copy_from_slice(&seq.to_be_bytes());
    p[46] = 0x50;
    p[47] = flags;
    let pseudo = [10u32, 0, 2, 15, 10, 0, 2, 2]
        .chunks(2)
        .map(|c| c[0] << 8 | c[1])
        .sum::<u32>()
        + 6;
    p[50..52].copy_from_slice(&fold(pseudo).to_be_bytes());
    p.extend_from_slice(payload);
    p
}

fn internet_sum(data: &[u8]) -> u16 {
    fold(
        data.chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
            .sum(),
    )
}

/// Checks a segment's IPv4 header and TCP checksums.
fn assert_valid_tcp(frame: &[u8]) {
    assert_eq!(internet_sum(&frame[14..34]), 0xFFFF, "IP header checksum");
    let tcp_len = frame.len() - 34;
    assert_eq!(
        usize::from(get_u16_be(frame, 16)),
        frame.len() - 14,
        "IP total length"
    );
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&frame[26..34]);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(tcp_len as u16).to_be_bytes());
    pseudo.extend_from_slice(&frame[34..]);
    assert_eq!(internet_sum(&pseudo), 0xFFFF, "TCP checksum");
}

fn context(ipcss: u8, ipcso: u8, tucss: u8, tucso: u8, tucmd: u8, hdr: u8, mss: u16) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[0] = ipcss;
    d[1] = ipcso;
    d[2..4].copy_from_slice(&33u16.to_le_bytes()); // IPCSE
    d[4] = tucss;
    d[5] = tucso;
    d[11] = tucmd | TXD_CMD_DEXT;
    d[13] = hdr;
    d[14..16].copy_from_slice(&mss.to_le_bytes());
    d
}

fn data_tx(buffer: u64, len: u32, dcmd: u8, popts: u8) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&buffer.to_le_bytes());
    d[8..11].copy_from_slice(&len.to_le_bytes()[..3]);
    d[10] = (d[10] & 0xF) | 0x10; // DTYP data
    d[11] = dcmd | TXD_CMD_DEXT;
    d[13] = popts;
    d
}

#[test]
fn tso_splits_into_mss_segments_with_valid_checksums() {
    let (mut nic, backend, mut ram) = nic();
    setup_tx(&mut nic, 8);
    let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let packet = tcp_packet(&payload, 1000, 0x18 | 0x01); // PSH ACK FIN
    ram.write(0x10000, &packet).unwrap();
    let tucmd = TUCMD_TCP | TUCMD_IP | TXD_CMD_TSE;
    put_descriptor(
        &mut ram,
        TX_RING,
        0,
        context(14, 24, 34, 50, tucmd, 54, 1448),
    );
    let popts = TXD_POPTS_IXSM | TXD_POPTS_TXSM;
    let eop = TXD_CMD_EOP | TXD_CMD_TSE | TXD_CMD_RS;
    put_descriptor(
        &mut ram,
        TX_RING,
        1,
        data_tx(0x10000, 54, TXD_CMD_TSE, popts),
    );
    put_descriptor(
        &mut ram,
        TX_RING,
        2,
        data_tx(0x10000 + 54, payload.len() as u32, eop, popts),
    );
    wr(&mut nic, TDT, 3);
    nic.run_dma(&mut ram, 0);
    let sent = backend.take_sent();
    assert_eq!(sent.len(), 3, "3000 bytes at MSS 1448");
    let mut joined = Vec::new();
    for (i, frame) in sent.iter().enumerate() {
        assert_valid_tcp(frame);
        assert_eq!(get_u32_be(frame, 38), 1000 + 1448 * i as u32, "sequence");
        assert_eq!(get_u16_be(frame, 18), i as u16, "IP ID increments");
        let last = i == 2;
        assert_eq!(frame[47] & 0x09 != 0, last, "PSH/FIN only on the last");
        joined.extend_from_slice(&frame[54..]);
    }
    assert_eq!(joined, payload);
}

#[test]
fn checksum_offload_without_tso() {
    let (mut nic, backend, mut ram) = nic();
    setup_tx(&mut nic, 8);
    let mut packet = tcp_packet(b"hello, e1000", 7, 0x18);
    // The stack filled in the IP header (length, checksum) and seeded the TCP field
    // with the full pseudo-header sum (length included).
    let len = packet.len() as u16 - 14;
    put_u16_be(&mut packet, 16, len);
    put_checksum(&mut packet, 14, 34, 24);
    let seed = get_u16_be(&packet, 50);
    put_u16_be(&mut packet, 50, fold(u32::from(seed) + u32::from(len - 20)));
    ram.write(0x10000, &packet).unwrap();
    put_descriptor(
        &mut ram,
        TX_RING,
        0,
        context(14, 24, 34, 50, TUCMD_TCP | TUCMD_IP, 0, 0),
    );
    let data = data_tx(0x10000, packet.len() as u32, TXD_CMD_EOP, TXD_POPTS_TXSM);
    put_descriptor(&mut ram, TX_RING, 1, data);
    wr(&mut nic, TDT, 2);
    nic.run_dma(&mut ram, 0);
    let sent = backend.take_sent();
    assert_eq!(sent.len(), 1);
    assert_valid_tcp(&sent[0]);
}

fn setup_rx(nic: &mut E1000, descriptors: u32, rctl: u32) {
    wr(nic, RDBAL, RX_RING as u32);
    wr(nic, RDLEN, descriptors * 16);
    wr(nic, RDH, 0);
    wr(nic, RDT, descriptors - 1);
    wr(nic, RCTL, RCTL_EN | rctl);
    wr(nic, IMS, ICR_RXT0);
}

fn rx_buffers(ram: &mut Ram, descriptors: u32) {
    for i in 0..descriptors {
        let buffer = 0x20000 + u64::from(i) * 0x800;
        let mut d = [0u8; 16];
        d[..8].copy_from_slice(&buffer.to_le_bytes());
        put_descriptor(ram, RX_RING, i, d);
    }
}

#[test]
fn receive_fills_the_ring_filters_and_appends_fcs() {
    let (mut nic, backend, mut ram) = nic();
    // Ring lengths are multiples of 128 bytes: 8 descriptors, 3 of them given to the NIC.
    setup_rx(&mut nic, 8, RCTL_BAM);
    wr(&mut nic, RDT, 3);
    rx_buffers(&mut ram, 8);
    let mut frame = vec![0u8; 100];
    frame[..6].copy_from_slice(&DEFAULT_MAC);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    frame[14..].fill(0x5A);
    backend.inject(&frame);
    // Not for us: another unicast address, and a multicast not in the table.
    let mut other = frame.clone();
    other[5] = 0x57;
    backend.inject(&other);
    other[0] = 0x01;
    backend.inject(&other);
    let broadcast = [0xFFu8; 60];
    backend.inject(&broadcast);
    nic.advance(0);
    assert!(nic.dma_pending());
    nic.run_dma(&mut ram, 0);
    let descriptor = |ram: &Ram, i: usize| ram.0[RX_RING as usize + 16 * i..][..16].to_vec();
    let d0 = descriptor(&ram, 0);
    assert_eq!(u16::from_le_bytes([d0[8], d0[9]]), 104, "frame + FCS");
    assert_eq!(
        d0[12] & (RXD_STA_DD | RXD_STA_EOP),
        RXD_STA_DD | RXD_STA_EOP
    );
    assert_eq!(&ram.0[0x20000..0x20000 + 100], &frame[..]);
    assert_eq!(
        u32::from_le_bytes(ram.0[0x20000 + 100..0x20000 + 104].try_into().unwrap()),
        crc32(&frame)
    );
    let d1 = descriptor(&ram, 1);
    assert_eq!(u16::from_le_bytes([d1[8], d1[9]]), 64, "broadcast accepted");
    assert_eq!(descriptor(&ram, 2)[12], 0, "filtered frames never arrive");
    assert_eq!(rd(&mut nic, RDH), 2);
    assert!(nic.irq_level());
    assert_ne!(rd(&mut nic, ICR) & ICR_RXT0, 0);
    // A full ring keeps frames queued until the driver returns descriptors.
    for _ in 0..3 {
        backend.inject(&frame);
    }
    nic.run_dma(&mut ram, 0);
    assert_eq!(rd(&mut nic, RDH), 3, "RDH stops one short of RDT");
    assert!(!nic.dma_pending(), "no descriptors: nothing to do");
    wr(&mut nic, RDT, 7);
    assert!(nic.dma_pending());
    nic.run_dma(&mut ram, 0);
    assert_eq!(rd(&mut nic, RDH), 5);
    // Multicast in the table (MO = 0: address bits 47:36) passes.
    let hash = (u16::from_le_bytes([other[4], other[5]]) >> 4) & 0xFFF;
    wr(&mut nic, MTA + 4 * u32::from(hash >> 5), 1 << (hash & 31));
    backend.inject(&other);
    nic.run_dma(&mut ram, 0);
    assert_eq!(rd(&mut nic, RDH), 6);
}

#[test]
fn itr_holds_off_the_next_interrupt() {
    let (mut nic, _, _) = nic();
    wr(&mut nic, ITR, 1000); // 256 µs
    wr(&mut nic, IMS, ICR_TXDW);
    nic.advance(1_000_000);
    wr(&mut nic, ICS, ICR_TXDW);
    assert!(nic.irq_level(), "first interrupt is immediate");
    rd(&mut nic, ICR);
    wr(&mut nic, ICS, ICR_TXDW);
    assert!(!nic.irq_level(), "held off by ITR");
    assert_eq!(nic.next_deadline_ns(), Some(1_000_000 + 256_000));
    nic.advance(1_000_000 + 256_000);
    assert!(nic.irq_level());
    // IMC masks.
    wr(&mut nic, IMC, ICR_TXDW);
    assert!(!nic.irq_level());
}

#[test]
fn hostile_rings_and_registers_do_not_panic() {
    let (mut nic, backend, mut ram) = nic();
    // Ring outside RAM, heads beyond the ring, huge lengths, descriptor chains that never
    // end a packet, and every register offset read and written.
    for (base, len, head, tail) in [
        (u32::MAX - 15, 0xFFFF_FFFF, 0, 5),
        (0x1000, 128, 200, 3),
        (0x1000, 0, 0, 1),
        (0x1000, 4096 * 16, 0, 4095),
    ] {
        wr(&mut nic, TDBAL, base);
        wr(&mut nic, TDBAH, 0xFFFF_FFFF);
        wr(&mut nic, TDLEN, len);
        wr(&mut nic, TDH, head);
        wr(&mut nic, TDT, tail);
        wr(&mut nic, TCTL, TCTL_EN);
        wr(&mut nic, RDBAL, base);
        wr(&mut nic, RDLEN, len);
        wr(&mut nic, RDH, head);
        wr(&mut nic, RDT, tail);
        wr(&mut nic, RCTL, RCTL_EN | RCTL_UPE | RCTL_BSEX | 3 << 16);
        backend.inject(&[0u8; 9000]);
        nic.advance(0);
        nic.run_dma(&mut ram, 0);
    }
    // Max-length data descriptors, none with EOP: the packet is dropped, not grown.
    wr(&mut nic, TDBAH, 0);
    wr(&mut nic, TDLEN, 64 * 16);
    wr(&mut nic, TDH, 0);
    wr(&mut nic, TDT, 0);
    for i in 0..64 {
        put_descriptor(&mut ram, 0x1000, i, data_tx(0, 0xF_FFFF, 0, 0));
    }
    put_descriptor(&mut ram, 0x1000, 63, data_tx(0, 0xF_FFFF, TXD_CMD_EOP, 0));
    wr(&mut nic, TDT, 63);
    nic.run_dma(&mut ram, 0);
    assert!(
        backend
            .take_sent()
            .iter()
            .all(|f| f.len() <= TX_PACKET_LIMIT)
    );
    for offset in (0..MMIO_SIZE as u32 + 8).step_by(4) {
        wr(&mut nic, offset, 0xFFFF_FFFF);
        rd(&mut nic, offset);
        nic.bar_read(0, u64::from(offset), 8);
    }
    nic.bar_write(1, 0, 4, 0xFFFF_FFFF);
    nic.bar_write(1, 4, 4, 0);
    nic.bar_read(1, 4, 4);
    nic.bar_read(5, 0, 4);
}

#[test]
fn io_window_reaches_the_registers() {
    let (mut nic, _, _) = nic();
    nic.bar_write(1, 0, 4, u64::from(STATUS));
    assert_eq!(nic.bar_read(1, 4, 4) as u32, rd(&mut nic, STATUS));
    nic.bar_write(1, 0, 4, u64::from(IMS));
    nic.bar_write(1, 4, 4, 0x84);
    assert_eq!(rd(&mut nic, IMS), 0x84);
}

#[test]
fn rings_wrap_and_transmit_work_is_bounded_per_call() {
    let (mut nic, backend, mut ram) = nic();
    setup_tx(&mut nic, 8);
    ram.write(0x10000, &[0x11; 1514]).unwrap();
    // Start near the end: descriptors 6, 7, 0, 1.
    wr(&mut nic, TDH, 6);
    wr(&mut nic, TDT, 6);
    for i in [6, 7, 0, 1] {
        put_descriptor(&mut ram, TX_RING, i, legacy_tx(0x10000, 1514, TXD_CMD_EOP));
    }
    wr(&mut nic, TDT, 2);
    nic.run_dma(&mut ram, 0);
    assert_eq!(backend.take_sent().len(), 4);
    assert_eq!(rd(&mut nic, TDH), 2, "wrapped");
    // 64 KiB TSO packets at the smallest MSS, the whole ring: one call stops after about
    // TX_BYTES_PER_CALL and the rest follows in the next.
    let payload = vec![0u8; 0xFFFF - 54];
    ram.write(0x20000, &tcp_packet(&payload, 0, 0x10)).unwrap();
    let ring = 256u32;
    setup_tx(&mut nic, ring);
    let tucmd = TUCMD_TCP | TUCMD_IP | TXD_CMD_TSE;
    for i in (0..ring - 1).step_by(2) {
        put_descriptor(&mut ram, TX_RING, i, context(14, 24, 34, 50, tucmd, 54, 64));
        let eop = TXD_CMD_EOP | TXD_CMD_TSE;
        put_descriptor(&mut ram, TX_RING, i + 1, data_tx(0x20000, 0xFFFF, eop, 0));
    }
    wr(&mut nic, TDT, ring - 2);
    nic.run_dma(&mut ram, 0);
    let first: usize = backend.take_sent().iter().map(Vec::len).sum();
    assert!(
        (TX_BYTES_PER_CALL..TX_BYTES_PER_CALL + 0x20000).contains(&first),
        "{first}"
    );
    assert!(nic.dma_pending(), "more to send");
    while nic.dma_pending() {
        nic.run_dma(&mut ram, 0);
    }
    assert_eq!(rd(&mut nic, TDH), ring - 2);
    // An MSS below the floor drops the packet instead of making thousands of frames.
    setup_tx(&mut nic, 8);
    backend.take_sent();
    put_descriptor(&mut ram, TX_RING, 0, context(14, 24, 34, 50, tucmd, 54, 1));
    put_descriptor(
        &mut ram,
        TX_RING,
        1,
        data_tx(0x20000, 0xFFFF, TXD_CMD_EOP | TXD_CMD_TSE, 0),
    );
    wr(&mut nic, TDT, 2);
    nic.run_dma(&mut ram, 0);
    assert!(backend.take_sent().is_empty());
}

/// A unicast frame for the NIC's address, delivered into the ring at `now`.
fn deliver_at(nic: &mut E1000, backend: &LoopbackBackend, ram: &mut Ram, now: u64) {
    let mut frame = vec![0x5Au8; 60];
    frame[..6].copy_from_slice(&DEFAULT_MAC);
    backend.inject(&frame);
    nic.advance(now);
    nic.run_dma(ram, now);
}

#[test]
fn receive_delay_timers_batch_rxt0_until_rdtr_or_radv() {
    let (mut nic, backend, mut ram) = nic();
    setup_rx(&mut nic, 64, 0);
    rx_buffers(&mut ram, 64);
    // Linux's e1000 with RxIntDelay=10, RxAbsIntDelay=30: 10.24 µs / 30.72 µs.
    wr(&mut nic, RDTR, 10);
    wr(&mut nic, RADV, 30);
    let t = 1_000_000;
    deliver_at(&mut nic, &backend, &mut ram, t);
    assert_eq!(rd(&mut nic, RDH), 1, "the frame is in the ring");
    assert!(!nic.irq_level(), "RXT0 waits for the packet timer");
    assert_eq!(nic.next_deadline_ns(), Some(t + 10_240));
    // Each packet restarts the packet timer; the absolute timer keeps running.
    deliver_at(&mut nic, &backend, &mut ram, t + 8_000);
    assert_eq!(nic.next_deadline_ns(), Some(t + 18_240));
    deliver_at(&mut nic, &backend, &mut ram, t + 16_000);
    deliver_at(&mut nic, &backend, &mut ram, t + 24_000);
    nic.advance(t + 30_719);
    assert!(!nic.irq_level());
    assert_eq!(
        nic.next_deadline_ns(),
        Some(t + 30_720),
        "RADV caps the delay"
    );
    nic.advance(t + 30_720);
    assert!(nic.irq_level(), "absolute timer expired");
    assert_eq!(rd(&mut nic, ICR) & ICR_RXT0, ICR_RXT0);
    assert!(!nic.irq_level());
    assert_eq!(nic.next_deadline_ns(), None, "both timers stopped");
    // Quiet after one packet: the packet timer fires first.
    deliver_at(&mut nic, &backend, &mut ram, t + 100_000);
    nic.advance(t + 110_240);
    assert!(nic.irq_level(), "packet timer expired");
    rd(&mut nic, ICR);
    // RDTR's flush bit fires a pending delay at once and is not kept.
    deliver_at(&mut nic, &backend, &mut ram, t + 200_000);
    assert!(!nic.irq_level());
    wr(&mut nic, RDTR, 10 | 1 << 31);
    assert!(nic.irq_level(), "flush partial descriptor block");
    assert_eq!(rd(&mut nic, RDTR), 10);
    rd(&mut nic, ICR);
    // RDTR 0: every packet interrupts at once.
    wr(&mut nic, RDTR, 0);
    deliver_at(&mut nic, &backend, &mut ram, t + 300_000);
    assert!(nic.irq_level());
}

#[test]
fn transmit_delay_applies_to_descriptors_with_ide() {
    let (mut nic, backend, mut ram) = nic();
    setup_tx(&mut nic, 8);
    // Linux's defaults: TxIntDelay=8 (8.192 µs), TxAbsIntDelay=32 (32.768 µs).
    wr(&mut nic, TIDV, 8);
    wr(&mut nic, TADV, 32);
    wr(&mut nic, IMS, ICR_TXDW);
    ram.write(0x10000, &[0xAA; 60]).unwrap();
    let eop_rs_ide = TXD_CMD_EOP | TXD_CMD_RS | TXD_CMD_IDE;
    for i in 0..4 {
        put_descriptor(&mut ram, TX_RING, i, legacy_tx(0x10000, 60, eop_rs_ide));
    }
    let t = 5_000_000;
    nic.advance(t);
    wr(&mut nic, TDT, 1);
    nic.run_dma(&mut ram, t);
    assert_eq!(backend.take_sent().len(), 1, "sent at once");
    assert_eq!(ram.0[(TX_RING + 12) as usize] & TXD_STA_DD, TXD_STA_DD);
    assert!(!nic.irq_level(), "TXDW delayed by TIDV");
    assert_eq!(nic.next_deadline_ns(), Some(t + 8_192));
    // Packets every 6 µs keep restarting TIDV until TADV expires.
    for (i, at) in [(2, t + 6_000), (3, t + 12_000), (4, t + 18_000)] {
        nic.advance(at);
        wr(&mut nic, TDT, i);
        nic.run_dma(&mut ram, at);
        assert!(!nic.irq_level());
    }
    assert_eq!(nic.next_deadline_ns(), Some(t + 26_192));
    nic.advance(t + 26_192);
    assert!(nic.irq_level(), "TIDV expired after the last packet");
    assert_eq!(rd(&mut nic, ICR) & ICR_TXDW, ICR_TXDW);
    // Without IDE the write-back interrupts at once.
    put_descriptor(
        &mut ram,
        TX_RING,
        4,
        legacy_tx(0x10000, 60, TXD_CMD_EOP | TXD_CMD_RS),
    );
    wr(&mut nic, TDT, 5);
    nic.run_dma(&mut ram, t + 40_000);
    assert!(nic.irq_level());
    rd(&mut nic, ICR);
    // TIDV's flush bit fires a pending delay.
    put_descriptor(&mut ram, TX_RING, 5, legacy_tx(0x10000, 60, eop_rs_ide));
    wr(&mut nic, TDT, 6);
    nic.run_dma(&mut ram, t + 50_000);
    assert!(!nic.irq_level());
    wr(&mut nic, TIDV, 8 | 1 << 31);
    assert!(nic.irq_level());
}

#[test]
fn itr_interval_counts_from_the_last_interrupt() {
    let (mut nic, _, _) = nic();
    wr(&mut nic, ITR, 195); // Linux's 20000 interrupts/s: 49.92 µs
    wr(&mut nic, IMS, ICR_RXT0);
    let t = 2_000_000;
    nic.advance(t);
    wr(&mut nic, ICS, ICR_RXT0);
    assert!(nic.irq_level());
    // The driver acknowledges 30 µs later; a new cause 1 µs after that waits for the
    // interval from the interrupt, not from the acknowledgement.
    nic.advance(t + 30_000);
    rd(&mut nic, ICR);
    nic.advance(t + 31_000);
    wr(&mut nic, ICS, ICR_RXT0);
    assert!(!nic.irq_level());
    assert_eq!(nic.next_deadline_ns(), Some(t + 49_920));
    nic.advance(t + 49_920);
    assert!(nic.irq_level());
    // ITR 0: no moderation.
    rd(&mut nic, ICR);
    wr(&mut nic, ITR, 0);
    nic.advance(t + 200_000);
    wr(&mut nic, ICS, ICR_RXT0);
    assert!(nic.irq_level());
    rd(&mut nic, ICR);
    wr(&mut nic, ICS, ICR_RXT0);
    assert!(nic.irq_level());
}
