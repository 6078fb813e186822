//! Both executors on one stream: the CPU executor runs on the test's guest memory, the GPU
//! executor on a copy of it taken before each command, and after every command guest
//! memory, presented frames, statistics and resource bytes must be equal byte for byte.
//! The CPU executor tests (`soft.rs`) run through this, so each of their streams checks
//! the GPU executor too.

use std::ops::Deref;

use crate::Frame;
use crate::aerogpu::processor::{Command, ResourceDesc, ResourceId};
use crate::aerogpu::{
    Executor, GuestMemory, SoftExecutor, SoftExecutorConfig, SubmissionInfo, VecMemory,
    WgpuExecutor,
};

pub(super) struct Twin {
    soft: SoftExecutor,
    gpu: WgpuExecutor,
    /// The GPU executor's guest memory (the test's memory before each command).
    gpu_mem: VecMemory,
    /// Resources the stream created (compared after every command).
    live: Vec<(ResourceId, bool)>,
}

pub(super) fn gpu_executor(config: SoftExecutorConfig) -> WgpuExecutor {
    WgpuExecutor::new_headless(config).unwrap_or_else(|e| {
        panic!(
            "\n\n*** NO WGPU ADAPTER ({e}) ***\nThe GPU executor tests need a Vulkan device; on \
             Debian that is Mesa lavapipe: apt-get install mesa-vulkan-drivers \
             (tests/install-deps.sh installs it).\n"
        )
    })
}

impl Twin {
    pub(super) fn new(config: SoftExecutorConfig, mem_size: usize) -> Self {
        Twin {
            soft: SoftExecutor::new(config),
            gpu: gpu_executor(config),
            gpu_mem: VecMemory::new(mem_size),
            live: Vec::new(),
        }
    }

    fn compare(&self, after: &str) {
        assert_eq!(self.soft.stats(), self.gpu.stats(), "stats after {after}");
        assert_eq!(
            self.soft.host_bytes(),
            self.gpu.host_bytes(),
            "host bytes after {after}"
        );
        assert_eq!(
            self.soft.resource_count(),
            self.gpu.resource_count(),
            "resources after {after}"
        );
        assert_eq!(
            self.soft.presented_frame().map(frame_key),
            self.gpu.presented_frame().map(frame_key),
            "presented frame after {after}"
        );
        for &(id, padded) in &self.live {
            let (Some(soft), Some(gpu)) =
                (self.soft.resource_bytes(id), self.gpu.resource_bytes(id))
            else {
                continue;
            };
            // Row padding is not stored on the GPU (it reads as zero there).
            if !padded {
                assert!(
                    soft == gpu.as_slice(),
                    "resource {id} bytes differ after {after}"
                );
            }
        }
    }
}

fn frame_key(f: &Frame) -> (u32, u32, Vec<u8>) {
    (f.width, f.height, f.pixels.clone())
}

impl Deref for Twin {
    type Target = SoftExecutor;

    fn deref(&self) -> &SoftExecutor {
        &self.soft
    }
}

impl Executor for Twin {
    fn begin_submission(&mut self, info: &SubmissionInfo) {
        self.soft.begin_submission(info);
        self.gpu.begin_submission(info);
    }

    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String> {
        mem.read(0, &mut self.gpu_mem.bytes)
            .expect("test memory size");
        if let Command::CreateResource { resource, desc, .. } = *command {
            let padded = matches!(desc, ResourceDesc::Texture2d(t) if t.row_pitch_bytes != 0);
            self.live.push((resource, padded));
        }
        let soft = self.soft.execute(command, mem);
        let gpu = self.gpu.execute(command, &mut self.gpu_mem);
        let what = format!("{command:?}");
        let what = &what[..what.len().min(200)];
        assert_eq!(
            soft.is_ok(),
            gpu.is_ok(),
            "{what}: CPU {soft:?}, GPU {gpu:?}"
        );
        let mut after = vec![0u8; self.gpu_mem.bytes.len()];
        mem.read(0, &mut after).expect("test memory size");
        assert!(
            after == self.gpu_mem.bytes,
            "guest memory differs after {what}"
        );
        self.compare(what);
        soft
    }

    fn end_submission(&mut self) {
        self.soft.end_submission();
        self.gpu.end_submission();
    }

    fn reset(&mut self) {
        self.soft.reset();
        self.gpu.reset();
        self.live.clear();
        self.compare("reset");
    }

    fn presented_frame(&self) -> Option<&Frame> {
        self.soft.presented_frame()
    }

    fn scanout_reprogrammed(&mut self) {
        self.soft.scanout_reprogrammed();
        self.gpu.scanout_reprogrammed();
        self.compare("scanout reprogrammed");
    }
}
