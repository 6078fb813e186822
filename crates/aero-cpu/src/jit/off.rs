//! Hosts without the native JIT (not x86-64 Linux): the same interface, always off.

use crate::decode::Block;
use crate::exec::Exec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitMode {
    Off,
    On,
    Verify,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    pub compiled: u64,
    pub refused: u64,
    pub native_runs: u64,
    pub native_loops: u64,
    pub helper_calls: u64,
    pub verified: u64,
    pub cache_flushes: u64,
}

/// Ignored: there is no JIT on this host.
pub fn set_default_mode(_mode: JitMode, _threshold: u32) {}

/// Ignored: there is no JIT on this host.
pub fn set_default_min_insns(_insns: u32) {}

#[derive(Default)]
pub struct Jit;

impl Jit {
    pub fn new(_mode: JitMode, _threshold: u32) -> Jit {
        Jit
    }
    pub fn mode(&self) -> JitMode {
        JitMode::Off
    }
    pub fn set_mode(&mut self, _mode: JitMode) {}
    pub fn set_threshold(&mut self, _runs: u32) {}
    pub fn set_min_insns(&mut self, _insns: usize) {}
    pub fn stats(&self) -> JitStats {
        JitStats::default()
    }
    #[inline(always)]
    pub(crate) fn run_block(
        &mut self,
        _ex: &mut Exec<'_>,
        _block: &Block,
        _idx: usize,
        _whole: bool,
        _budget: u64,
    ) -> Option<bool> {
        None
    }
}
