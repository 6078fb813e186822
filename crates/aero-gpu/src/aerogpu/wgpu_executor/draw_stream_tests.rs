//! A command stream (built with `aero_protocol::writer`) through the real processor into
//! the GPU executor with the draw path beside it, as the executor is to call it: the
//! drawn pixels are read back from the executor's store in guest layout.

use aero_protocol::cmd::{self, Opcode, PrimitiveTopology};
use aero_protocol::pci::Format;
use aero_protocol::writer::CmdStreamWriter;

use super::{DrawPath, execute_draw};
use crate::aerogpu::executor::SubmissionInfo;
use crate::aerogpu::processor::Command;
use crate::aerogpu::wgpu_executor::executor_draw_tests::{program, vertex_buffer};
use crate::aerogpu::{
    AllocTable, CommandProcessor, Executor, GuestMemory, Limits, SoftExecutorConfig, VecMemory,
    WgpuExecutor,
};

/// The GPU executor plus the draw path, wired as `execute_draw` documents.
struct WithDraws {
    exec: WgpuExecutor,
    path: Option<DrawPath>,
}

impl Executor for WithDraws {
    fn begin_submission(&mut self, info: &SubmissionInfo) {
        self.exec.begin_submission(info);
        if let Some(p) = &mut self.path {
            p.set_context(info.context_id);
        }
    }

    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String> {
        self.exec.execute(command, mem)?;
        let mut path = self.path.take().ok_or("draw path lost")?;
        let r = execute_draw(&mut self.exec, &mut path, command);
        self.path = Some(path);
        r.map(|_| ()).map_err(|e| e.to_string())
    }

    fn flush(&mut self) -> Result<(), String> {
        self.exec.flush()?;
        match &self.path {
            Some(p) => p.batch.flush(),
            None => Ok(()),
        }
    }
}

#[test]
fn triangle_through_the_processor_lands_in_the_executors_target() {
    let exec = WgpuExecutor::new_headless(SoftExecutorConfig::default()).expect("wgpu device");
    let path = DrawPath::new(exec.device().clone(), exec.queue().clone());
    let mut ex = WithDraws {
        exec,
        path: Some(path),
    };
    let mut p = CommandProcessor::new(Limits::default());
    let mut mem = VecMemory::new(1 << 16);
    let table = AllocTable::new();

    // Screen triangle (D3D9 pixel centres at integers) (0,0) (8,0) (0,8), clockwise:
    // pixel (x, y) is inside when x + y < 8, and on the hypotenuse (x + y = 8) not.
    let mut vb = Vec::new();
    for (xs, ys) in [(0.0f32, 0.0f32), (8.0, 0.0), (0.0, 8.0)] {
        for f in [xs / 4.0 - 1.0, 1.0 - ys / 4.0, 0.5, 1.0] {
            vb.extend_from_slice(&f.to_le_bytes());
        }
        vb.extend_from_slice(&0xFF11_2233u32.to_le_bytes()); // D3DCOLOR ARGB
    }

    let mut w = CmdStreamWriter::new();
    w.create_texture2d(1, Format::B8G8R8A8Unorm as u32, 8, 8, 0);
    w.create_buffer(2, cmd::RESOURCE_USAGE_VERTEX_BUFFER, vb.len() as u64, 0, 0);
    w.push(
        Opcode::UploadResource,
        &cmd::UploadResource {
            resource_handle: 2,
            offset_bytes: 0,
            size_bytes: vb.len() as u64,
            ..Default::default()
        },
        &vb,
    );
    w.push(
        Opcode::SetRenderTargets,
        &cmd::SetRenderTargets {
            color_count: 1,
            colors: [1, 0, 0, 0, 0, 0, 0, 0],
            ..Default::default()
        },
        &[],
    );
    w.push(
        Opcode::Clear,
        &cmd::Clear {
            flags: cmd::CLEAR_COLOR,
            color_rgba_f32: [0.0, 0.0, 1.0, 1.0].map(f32::to_bits),
            ..Default::default()
        },
        &[],
    );
    program(
        &mut w,
        (3, 4, 5),
        "vs_2_0\ndcl_position v0\ndcl_color v1\nmov oPos, v0\nmov oD0, v1\n",
        "ps_2_0\ndcl v0\nmov oC0, v0\n",
        &[(0, 3, 0), (16, 4, 10)],
    );
    vertex_buffer(&mut w, 2, 20);
    w.push(
        Opcode::SetPrimitiveTopology,
        &cmd::SetPrimitiveTopology {
            topology: PrimitiveTopology::TriangleList as u32,
            ..Default::default()
        },
        &[],
    );
    w.push(
        Opcode::Draw,
        &cmd::Draw {
            vertex_count: 3,
            instance_count: 1,
            ..Default::default()
        },
        &[],
    );
    let stream = w.finish();
    p.process(&stream, &table, &mut mem, &mut ex).unwrap();

    let id = p.objects().resource(1).unwrap().0;
    let bytes = ex.exec.resource_bytes(id).unwrap();
    let expect: Vec<u8> = (0..8u32)
        .flat_map(|y| (0..8u32).map(move |x| x + y < 8))
        .flat_map(|inside| {
            if inside {
                [0x33, 0x22, 0x11, 0xFF] // B, G, R, A
            } else {
                [0xFF, 0x00, 0x00, 0xFF] // the clear's blue
            }
        })
        .collect();
    assert_eq!(bytes, expect);
    assert_eq!(ex.path.as_ref().unwrap().draws, 1);
}
