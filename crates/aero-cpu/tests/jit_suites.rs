//! Every CPU test suite again, with the JIT on and compiling each block on its first run,
//! so the suites' own assertions check compiled code (verify mode, which re-checks each
//! compiled block against the interpreter, copies guest RAM per block and is too slow for
//! the large suites; `tests/jit.rs` runs it). On hosts without the JIT this repeats the
//! interpreter runs.

// Each suite brings its own copy of the shared test modules.
#![allow(clippy::duplicate_mod)]

// Before any test runs (nextest runs each test in its own process; `cargo test` runs them
// as threads of one), make every CPU created in this binary use the JIT.
#[cfg(target_os = "linux")]
#[used]
// SAFETY: a plain function pointer in .init_array, run once by the loader before main;
// the function only stores three atomics.
#[unsafe(link_section = ".init_array")]
static JIT_FOR_EVERY_CPU: extern "C" fn() = jit_for_every_cpu;

#[cfg(target_os = "linux")]
extern "C" fn jit_for_every_cpu() {
    aero_cpu::jit::set_default_mode(aero_cpu::jit::JitMode::On, 1);
    aero_cpu::jit::set_default_min_insns(1);
}

#[path = "cpu_model.rs"]
mod cpu_model;
#[path = "fused_branches.rs"]
mod fused_branches;
#[path = "fuzz.rs"]
mod fuzz;
#[path = "legacy_semantics.rs"]
mod legacy_semantics;
#[path = "long_mode.rs"]
mod long_mode;
#[path = "protected_mode.rs"]
mod protected_mode;
#[path = "qemu_diff.rs"]
mod qemu_diff;
#[path = "real_mode.rs"]
mod real_mode;
#[path = "sse.rs"]
mod sse;
#[path = "ssse3.rs"]
mod ssse3;
#[path = "stack_width.rs"]
mod stack_width;
#[path = "string_ops.rs"]
mod string_ops;
#[path = "system_instructions.rs"]
mod system_instructions;
#[path = "v86_and_debug.rs"]
mod v86_and_debug;
#[path = "x87.rs"]
mod x87;

/// The switch above took effect (a CPU made here has the JIT on, where there is one).
#[test]
fn cpus_in_this_binary_run_the_jit() {
    let cpu = aero_cpu::Cpu::new();
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        assert_eq!(cpu.jit_mode(), aero_cpu::jit::JitMode::On);
    }
}
