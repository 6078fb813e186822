//! Bounded, fixed-seed random testing of everything a guest controls: ring header and
//! descriptors, allocation tables, command streams, register writes. The device must
//! never panic, and every DMA stays inside guest RAM (VecMemory rejects the rest).

use aero_protocol::cmd::{self, Opcode};
use aero_protocol::pci::{Format, reg};
use aero_protocol::ring::{AllocEntry, SubmitDesc};
use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

use super::guest::{BACKING_GPA, Guest, RAM_SIZE};
use crate::Frame;
use crate::aerogpu::{
    CommandProcessor, Executor, GuestMemory, Limits, NullExecutor, SoftExecutor,
    SoftExecutorConfig, VecMemory,
};

/// The CPU executor with a small host-memory cap (random sizes hit it instead of
/// allocating hundreds of MiB).
fn small_soft_executor() -> SoftExecutor {
    SoftExecutor::new(SoftExecutorConfig {
        max_host_bytes: 16 << 20,
    })
}

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn small(&mut self) -> u32 {
        // Mostly plausible values, sometimes extremes.
        match self.below(8) {
            0 => u32::MAX,
            1 => 0,
            2 => self.next() as u32,
            _ => self.below(40) as u32,
        }
    }
}

/// A stream of mostly well-formed packets with random fields, then random corruption.
fn random_stream(rng: &mut Rng) -> Vec<u8> {
    let mut w = CmdStreamWriter::new();
    let opcodes = Opcode::C_VALUES;
    for _ in 0..rng.below(24) {
        let op = opcodes[rng.below(opcodes.len() as u64) as usize].1 as u32;
        let fixed_len = 8 + rng.below(64) as usize;
        let mut fields = vec![0u8; fixed_len];
        for chunk in fields.chunks_mut(4).skip(2) {
            let v = rng.small().to_le_bytes();
            let n = chunk.len();
            chunk.copy_from_slice(&v[..n]);
        }
        let payload: Vec<u8> = (0..rng.below(48)).map(|_| rng.next() as u8).collect();
        let mut all = fields[8..].to_vec();
        all.extend_from_slice(&payload);
        w.push_bare(
            if rng.below(10) == 0 {
                rng.next() as u32
            } else {
                op
            },
            &all,
        );
        if rng.below(4) == 0 {
            w.create_texture2d(
                rng.small(),
                Format::B8G8R8A8Unorm as u32,
                rng.small(),
                rng.small(),
                rng.small(),
            );
        }
        if rng.below(4) == 0 {
            w.create_buffer(rng.small(), 1, rng.next() % 4096, rng.small(), rng.small());
        }
    }
    let mut s = w.finish();
    for _ in 0..rng.below(3) {
        let i = rng.below(s.len() as u64) as usize;
        s[i] = rng.next() as u8;
    }
    if rng.below(8) == 0 {
        let cut = rng.below(s.len() as u64) as usize;
        s.truncate(cut);
    }
    s
}

fn random_table(rng: &mut Rng) -> Vec<u8> {
    let entries: Vec<AllocEntry> = (0..rng.below(6))
        .map(|_| AllocEntry {
            alloc_id: rng.small(),
            flags: rng.below(2) as u32,
            gpa: if rng.below(6) == 0 {
                rng.next()
            } else {
                BACKING_GPA + rng.below(0x10000)
            },
            size_bytes: if rng.below(6) == 0 {
                rng.next()
            } else {
                rng.below(0x20000)
            },
            reserved0: 0,
        })
        .collect();
    let mut t = encode_alloc_table(&entries);
    if rng.below(6) == 0 {
        let i = rng.below(t.len() as u64) as usize;
        t[i] = rng.next() as u8;
    }
    t
}

#[test]
fn random_streams_never_panic_the_processor() {
    random_streams(&mut NullExecutor::default());
    let mut soft = small_soft_executor();
    random_streams(&mut soft);
    // The CPU executor really ran commands, and stayed within its cap.
    assert!(soft.stats().commands > 300, "{:?}", soft.stats());
    assert!(soft.host_bytes() <= 16 << 20);
}

fn random_streams(exec: &mut dyn Executor) {
    let mut rng = Rng(0x5EED_0001);
    let mut mem = VecMemory::new(1 << 20);
    let mut p = CommandProcessor::new(Limits {
        max_handles: 64,
        ..Limits::default()
    });
    let mut table = crate::aerogpu::AllocTable::new();
    let mut ok = 0;
    for _ in 0..3000 {
        let t = random_table(&mut rng);
        let _ = table.parse(&t, &mem);
        let s = random_stream(&mut rng);
        if p.process(&s, &table, &mut mem, exec).is_ok() {
            ok += 1;
        }
        assert!(p.objects().handle_count() <= 64);
    }
    // Both outcomes must be exercised for the test to mean anything.
    assert!(ok > 50 && ok < 3000, "ok = {ok}");
}

#[test]
fn random_rings_descriptors_and_registers_never_panic_the_device() {
    random_device_traffic(Guest::new(8, 0));
    let g = random_device_traffic(Guest::with_executor(8, 0, small_soft_executor()));
    let stats = g.dev.executor().stats();
    assert!(stats.commands > 0 && stats.submissions > 100, "{stats:?}");
}

fn random_device_traffic<E: Executor>(mut g: Guest<E>) -> Guest<E> {
    let mut rng = Rng(0x5EED_0002);
    let mut frame = Frame::new();
    let mut now = 0u64;
    for i in 0..1500 {
        if i % 50 == 0 {
            g.reinit_ring();
        }
        match rng.below(10) {
            0 => {
                // Random register write, including ring/fence/scanout addresses.
                let regs = [
                    reg::RING_GPA_LO,
                    reg::RING_SIZE_BYTES,
                    reg::RING_CONTROL,
                    reg::FENCE_GPA_LO,
                    reg::FENCE_GPA_HI,
                    reg::IRQ_ENABLE,
                    reg::IRQ_ACK,
                    reg::SCANOUT0_ENABLE,
                    reg::SCANOUT0_WIDTH,
                    reg::SCANOUT0_HEIGHT,
                    reg::SCANOUT0_PITCH_BYTES,
                    reg::SCANOUT0_FB_GPA_LO,
                    reg::CURSOR_ENABLE,
                    reg::CURSOR_WIDTH,
                    reg::CURSOR_X,
                    reg::CURSOR_FB_GPA_LO,
                    reg::SCANOUT0_FORMAT,
                ];
                let off = regs[rng.below(regs.len() as u64) as usize];
                let v = rng.small();
                // Keep the ring usable most of the time so submissions get exercised.
                if off != reg::RING_GPA_LO || rng.below(4) == 0 {
                    g.write(off, v);
                }
            }
            1 => {
                // Scribble over the ring header or a descriptor.
                let gpa = super::guest::RING_GPA + rng.below(64 + 8 * 64);
                g.mem.write(gpa, &[rng.next() as u8]).unwrap();
            }
            2 => {
                now += rng.below(40_000_000);
                g.tick(now);
            }
            3 => {
                let _ = g.dev.render_scanout(&g.mem, &mut frame);
            }
            _ => {
                let stream = random_stream(&mut rng);
                let table = random_table(&mut rng);
                let table_gpa = g.place(&table);
                let mut d: SubmitDesc = g.desc(
                    &stream,
                    Some((table_gpa, table.len() as u32)),
                    rng.next() % 1000,
                    rng.below(4) as u32,
                );
                if rng.below(8) == 0 {
                    d.cmd_gpa = rng.next();
                }
                if rng.below(8) == 0 {
                    d.alloc_table_size_bytes = rng.small();
                }
                if rng.below(10) == 0 {
                    d.desc_size_bytes = rng.small();
                }
                g.push_desc(&d);
                if rng.below(3) > 0 {
                    g.doorbell();
                }
            }
        }
        let _ = g.read(reg::IRQ_STATUS);
    }
    assert!(g.dev.stats().submissions > 100);
    assert!(g.dev.stats().failed_submissions > 0);
    // Every DMA went through VecMemory's checks; RAM size is unchanged.
    assert_eq!(g.mem.bytes.len(), RAM_SIZE);
    let mut probe = [0u8; 4];
    assert!(g.mem.read(RAM_SIZE as u64 - 2, &mut probe).is_err());
    let _ = cmd::MAX_TEXTURE_DIM;
    g
}
