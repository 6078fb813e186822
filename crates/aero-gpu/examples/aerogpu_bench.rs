//! Pushes command streams through AeroGPU's ring + validating processor + null executor
//! and prints validated commands/s and submissions/s.
//!
//! `cargo run --release -p aero-gpu --example aerogpu_bench [submissions]`

mod common;

use std::time::Instant;

use aero_gpu::aerogpu::{AeroGpu, AeroGpuConfig, GuestMemory, VecMemory};
use aero_protocol::cmd::{self, Opcode};
use aero_protocol::pci::Format;
use aero_protocol::ring::AllocEntry;
use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

const ENTRIES: u32 = 256;
const STREAM_GPA: u64 = 0x10_0000;
const TABLE_GPA: u64 = 0x8_0000;
const BACKING_GPA: u64 = 0x40_0000;

/// One frame's worth of typical D3D9 traffic: state, constants, bindings, draws.
fn frame_stream() -> (Vec<u8>, u32) {
    let mut w = CmdStreamWriter::new();
    w.create_texture2d(1, Format::B8G8R8A8Unorm as u32, 256, 256, 1);
    w.create_buffer(2, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 65536, 2, 0);
    let mut rt = cmd::SetRenderTargets {
        color_count: 1,
        ..Default::default()
    };
    rt.colors[0] = 1;
    w.push(Opcode::SetRenderTargets, &rt, &[]);
    w.clear([0.1, 0.2, 0.3, 1.0]);
    let vb = cmd::VertexBufferBinding {
        buffer: 2,
        stride_bytes: 32,
        ..Default::default()
    };
    for i in 0..60u32 {
        w.push(
            Opcode::SetRenderState,
            &cmd::SetRenderState {
                state: 7,
                value: i,
                ..Default::default()
            },
            &[],
        );
        let consts = cmd::SetShaderConstants {
            stage: 0,
            start_register: 0,
            count: 4,
            ..Default::default()
        };
        w.push(Opcode::SetShaderConstantsF, &consts, &[0u8; 64]);
        w.push(
            Opcode::SetVertexBuffers,
            &cmd::SetVertexBuffers {
                start_slot: 0,
                buffer_count: 1,
                ..Default::default()
            },
            &vb.to_bytes(),
        );
        w.push(
            Opcode::SetTexture,
            &cmd::SetTexture {
                shader_stage: 1,
                slot: 0,
                texture: 1,
                ..Default::default()
            },
            &[],
        );
        let dirty = cmd::ResourceDirtyRange {
            resource_handle: 2,
            offset_bytes: u64::from(i) * 64,
            size_bytes: 64,
            ..Default::default()
        };
        w.push(Opcode::ResourceDirtyRange, &dirty, &[]);
        w.draw(3);
    }
    w.present(0);
    w.destroy_resource(1);
    w.destroy_resource(2);
    let packets = w.packet_count();
    (w.finish(), packets)
}

fn main() {
    let submissions: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let mut mem = VecMemory::new(16 << 20);
    let mut dev = AeroGpu::new(AeroGpuConfig::default());

    let (stream, packets) = frame_stream();
    mem.write(STREAM_GPA, &stream).unwrap();
    let table = encode_alloc_table(&[
        AllocEntry {
            alloc_id: 1,
            flags: 0,
            gpa: BACKING_GPA,
            size_bytes: 256 * 256 * 4,
            reserved0: 0,
        },
        AllocEntry {
            alloc_id: 2,
            flags: 0,
            gpa: BACKING_GPA + 0x10_0000,
            size_bytes: 65536,
            reserved0: 0,
        },
    ]);
    mem.write(TABLE_GPA, &table).unwrap();

    let mut ring = common::DriverRing::start(&mut dev, &mut mem, ENTRIES, TABLE_GPA, table.len());

    // Like a driver: fill up to 16 descriptors, ring the doorbell, ack the IRQ.
    let start = Instant::now();
    while ring.fence < submissions {
        for _ in 0..16.min(submissions - ring.fence) {
            ring.queue(&mut mem, STREAM_GPA, stream.len());
        }
        ring.kick(&mut dev, &mut mem);
    }
    let secs = start.elapsed().as_secs_f64();

    assert_eq!(dev.completed_fence(), submissions, "every fence completed");
    assert_eq!(dev.error().count, 0, "no validation errors");
    let commands = dev.stats().packets;
    assert_eq!(commands, submissions * u64::from(packets));
    println!(
        "aerogpu_bench: {submissions} submissions x {packets} packets ({} bytes each) in {secs:.3} s",
        stream.len()
    );
    println!("  {:.0} validated commands/s", commands as f64 / secs);
    println!("  {:.0} submissions/s", submissions as f64 / secs);
    println!(
        "  {:.1} MiB/s of command stream",
        (submissions * stream.len() as u64) as f64 / secs / (1 << 20) as f64
    );
}
