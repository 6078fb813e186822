//! Differential test of aero-cpu against QEMU TCG.
//!
//! A deterministic generator makes single-instruction cases (integer ALU and flags,
//! shifts/rotates, mul/div incl. #DE, string ops, BCD, bit ops, x87, SSE/SSE2, SSSE3,
//! MMX, SSE/SSE2 on MMX registers) spread over real mode, 32-bit protected mode with paging and
//! 64-bit long mode. They are packed into
//! a multiboot image that QEMU runs once per batch (output cached in
//! `~/.cache/aero/qemu-diff`), and the same image runs on `aero_cpu::Cpu`. Every record
//! (GPRs, flags, selectors, x87/SSE state, scratch memory, stack) is compared, masking only
//! what the SDM leaves undefined for that instruction; other exclusions are listed in
//! `qemu_diff/exclusions.rs`.
//!
//! `AERO_DIFF_CASES=N` runs N cases (default 5000) plus `AERO_DIFF_STACK_CASES` stack
//! cases (default 1200, `qemu_diff/stackgen.rs`), `AERO_DIFF_SEED=S` another seed,
//! `AERO_DIFF_ONLY=ID` just that case (for debugging a mismatch; `AERO_DIFF_VERBOSE=1` prints
//! every record), `AERO_DIFF_QEMU_TIMEOUT=S` gives up on QEMU sooner. All mismatches are
//! written to `target/tmp/qemu_diff_mismatches.txt`.
//! Skips (with a message) only when qemu-system-x86_64 is not installed.

#[path = "qemu_diff/aero_run.rs"]
mod aero_run;
#[path = "qemu_diff/case.rs"]
mod case;
#[path = "qemu_diff/casegen.rs"]
mod casegen;
#[path = "qemu_diff/chunk.rs"]
mod chunk;
#[path = "qemu_diff/compare.rs"]
mod compare;
#[path = "qemu_diff/exclusions.rs"]
mod exclusions;
#[path = "qemu_diff/fpvals.rs"]
mod fpvals;
#[path = "qemu_diff/image.rs"]
mod image;
#[path = "qemu_diff/layout.rs"]
mod layout;
#[path = "qemu_diff/qemu.rs"]
mod qemu;
#[path = "shared/qemu_debugcon.rs"]
mod qemu_debugcon;
#[path = "qemu_diff/record.rs"]
mod record;
#[path = "qemu_diff/rng.rs"]
mod rng;
#[path = "qemu_diff/stackgen.rs"]
mod stackgen;

use std::collections::BTreeMap;

use case::{Case, Mode, Undefined};
use iced_x86::{Code, Instruction, MemoryOperand, Register};
use record::Record;

const DEFAULT_SEED: u64 = 0xAE50_D1FF_0000_0001;
const DEFAULT_CASES: usize = 5000;
/// Stack cases (`stackgen.rs`) run after the main ones (`AERO_DIFF_STACK_CASES`).
const DEFAULT_STACK_CASES: usize = 1200;
/// Cases per image (one QEMU run each); keeps the image below its size limit.
const BATCH: usize = 6000;

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim();
            let parsed = if let Some(hex) = v.strip_prefix("0x") {
                u64::from_str_radix(hex, 16)
            } else {
                v.parse()
            };
            parsed.unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}"))
        }
        Err(_) => default,
    }
}

fn qemu_or_skip() -> bool {
    if qemu::available() {
        return true;
    }
    eprintln!(
        "SKIPPED: {} is not installed (apt-get install qemu-system-x86)",
        qemu::QEMU
    );
    false
}

/// Runs `cases` under QEMU and returns the records by id. If QEMU dies, names the case
/// that was running.
fn qemu_records(image: &image::Image, cases: &[Case]) -> BTreeMap<u32, Record> {
    let expected = cases.len();
    let (out, cached) = match qemu::run(&image.bytes) {
        Ok(r) => r,
        Err(f) => {
            let partial = record::parse(&f.partial).records;
            // A case that sends the run back into earlier code repeats ids: name the
            // case after the last record before the first repeat.
            let mut seen = std::collections::BTreeSet::new();
            let first_repeat = partial.iter().position(|r| !seen.insert(r.id));
            let done = first_repeat.unwrap_or(partial.len());
            let order: Vec<u32> = image
                .chunks
                .iter()
                .flat_map(|c| c.ids.iter().copied())
                .collect();
            let culprit = order
                .get(done)
                .and_then(|id| cases.iter().find(|c| c.id == *id));
            let what = culprit
                .map(|c| {
                    format!(
                        "case {} [{}] {}: {}",
                        c.id,
                        c.mode.name(),
                        c.text,
                        compare::describe_inputs(c)
                    )
                })
                .unwrap_or_default();
            panic!(
                "QEMU run failed: {} after {done} records; running {what}",
                f.message
            );
        }
    };
    let parsed = record::parse(&out);
    assert!(
        parsed.complete,
        "QEMU output incomplete: {} records, garbage at {:?} (cached: {cached})",
        parsed.records.len(),
        parsed.garbage_at
    );
    assert_eq!(
        parsed.records.len(),
        expected,
        "QEMU produced a record per case"
    );
    parsed.records.into_iter().map(|r| (r.id, r)).collect()
}

#[test]
fn cpu_matches_qemu() {
    if !qemu_or_skip() {
        return;
    }
    let seed = env_number("AERO_DIFF_SEED", DEFAULT_SEED);
    let n = env_number("AERO_DIFF_CASES", DEFAULT_CASES as u64) as usize;
    let mut generator = casegen::Generator::new(seed);
    for (mode, cat, codes) in generator.coverage() {
        eprintln!("  encodings: {:<14} {:<6} {codes}", mode.name(), cat);
    }
    let mut cases: Vec<Case> = (0..n as u32).map(|id| generator.case(id)).collect();
    let n_stack = env_number("AERO_DIFF_STACK_CASES", DEFAULT_STACK_CASES as u64) as usize;
    let mut stack_generator = stackgen::StackGen::new(seed);
    eprintln!(
        "  stack cases:  {n_stack} over {} push/pop/call/ret/enter/leave/iret/int forms",
        stackgen::StackGen::forms()
    );
    cases.extend((0..n_stack as u32).map(|k| stack_generator.case(n as u32 + k)));
    let n = cases.len();
    // AERO_DIFF_ONLY=id re-runs a single case (same inputs, its own tiny image) for debugging.
    if let Ok(only) = std::env::var("AERO_DIFF_ONLY") {
        let id: u32 = only
            .trim()
            .parse()
            .expect("AERO_DIFF_ONLY must be a case id");
        cases.retain(|c| c.id == id);
        assert!(
            !cases.is_empty(),
            "case {id} is not among the {n} generated cases"
        );
    }

    let mut mismatches: Vec<String> = Vec::new();
    let mut shown: BTreeMap<(&str, Mode), usize> = BTreeMap::new();
    let mut sample: Vec<String> = Vec::new();
    let mut per_category: BTreeMap<(&str, Mode), (usize, usize)> = BTreeMap::new();
    for batch in cases.chunks(BATCH) {
        let image = image::build(batch).unwrap_or_else(|e| panic!("building the test image: {e}"));
        let qemu = qemu_records(&image, batch);
        let aero = aero_run::run(&image);
        let crashed: BTreeMap<u32, String> = aero.crashed.into_iter().collect();
        let aero: BTreeMap<u32, Record> = aero.records.into_iter().map(|r| (r.id, r)).collect();
        for case in batch {
            let entry = per_category.entry((case.category, case.mode)).or_default();
            entry.0 += 1;
            let q = &qemu[&case.id];
            if std::env::var_os("AERO_DIFF_ONLY").is_some()
                || std::env::var_os("AERO_DIFF_VERBOSE").is_some()
            {
                eprintln!(
                    "case {} {}\n  qemu: {:x?}\n  aero: {:x?}",
                    case.id,
                    case.text,
                    q,
                    aero.get(&case.id)
                );
            }
            let problems = match aero.get(&case.id) {
                Some(a) => compare::diff(case, q, a),
                None => vec![format!(
                    "no Aero result: {}",
                    crashed
                        .get(&case.id)
                        .map(String::as_str)
                        .unwrap_or("run ended earlier")
                )],
            };
            if !problems.is_empty() {
                entry.1 += 1;
                let n_shown = shown.entry((case.category, case.mode)).or_default();
                *n_shown += 1;
                let text = format!(
                    "case {} [{} {}] {}\n    in: {}\n    {}",
                    case.id,
                    case.mode.name(),
                    case.category,
                    case.text,
                    compare::describe_inputs(case),
                    problems.join("\n    ")
                );
                if *n_shown <= 3 {
                    sample.push(text.clone());
                }
                mismatches.push(text);
            }
        }
    }
    eprintln!(
        "qemu_diff: {n} cases, seed {seed:#x}, {} mismatches ({} excluded mnemonics, {} excluded encodings, {} generator constraints: see qemu_diff/exclusions.rs)",
        mismatches.len(),
        exclusions::EXCLUDED_MNEMONICS.len(),
        exclusions::EXCLUDED_CODES.len(),
        exclusions::GENERATOR_CONSTRAINTS.len()
    );
    for ((cat, mode), (total, bad)) in &per_category {
        eprintln!(
            "  {:<14} {:<6} {:>5} cases {:>5} mismatches",
            mode.name(),
            cat,
            total,
            bad
        );
    }
    let full = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("qemu_diff_mismatches.txt");
    let _ = std::fs::write(&full, mismatches.join("\n"));
    eprintln!(
        "all mismatches: {}; up to 3 per mode and category:",
        full.display()
    );
    for m in &sample {
        eprintln!("{m}");
    }
    assert!(
        mismatches.is_empty(),
        "{} of {n} cases differ from QEMU (first ones above)",
        mismatches.len()
    );
}

/// Hand-written cases with known results check the harness itself against QEMU
/// (record layout, exception capture, memory and x87 dumps), independent of Aero.
#[test]
fn harness_reports_known_results_from_qemu() {
    if !qemu_or_skip() {
        return;
    }
    let mut cases = Vec::new();
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let scratch = layout::chunk_code_base(mode) + layout::C_SCRATCH;
        let displ = if mode == Mode::Real { 2 } else { 4 };
        let base = known_case(mode, (i * 10) as u32);
        let mut add = base.clone();
        add.insn = Instruction::with2(Code::Add_rm32_r32, Register::EAX, Register::EBX).unwrap();
        add.gpr[0] = 1;
        add.gpr[3] = 2;
        let mut div = base.clone();
        div.id += 1;
        div.insn = Instruction::with1(Code::Div_rm32, Register::ECX).unwrap();
        div.gpr[1] = 0;
        let mut store = base.clone();
        store.id += 2;
        store.insn = Instruction::with2(
            Code::Mov_rm32_r32,
            MemoryOperand::with_displ(scratch + 8, displ),
            Register::EDX,
        )
        .unwrap();
        store.gpr[2] = 0xDEAD_BEEF;
        let mut fld1 = base.clone();
        fld1.id += 3;
        fld1.insn = Instruction::with(Code::Fld1);
        let mut fx = Box::new([0u8; 512]);
        fx[0..2].copy_from_slice(&0x037Fu16.to_le_bytes());
        fx[24..28].copy_from_slice(&0x1F80u32.to_le_bytes());
        fld1.fx = Some(fx);
        cases.extend([add, div, store, fld1]);
    }
    let image = image::build(&cases).expect("image");
    let records = qemu_records(&image, &cases);
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let id = (i * 10) as u32;
        let add = &records[&id];
        assert_eq!(add.exc_vec, None, "{mode:?}");
        assert_eq!(add.gpr[0] & 0xFFFF_FFFF, 3, "{mode:?} add");
        assert_eq!(add.rflags & 0x8D5, 0x4, "{mode:?} add flags: only PF");
        assert_eq!(add.gpr[3] & 0xFFFF_FFFF, 2, "{mode:?} ebx kept");
        let div = &records[&(id + 1)];
        assert_eq!(div.exc_vec, Some(0), "{mode:?} div by zero is #DE");
        let store = &records[&(id + 2)];
        assert_eq!(
            &store.scratch[8..12],
            &0xDEAD_BEEFu32.to_le_bytes(),
            "{mode:?} store"
        );
        let fld1 = &records[&(id + 3)];
        let fx = fld1.fx.as_ref().expect("x87 case dumps FXSAVE");
        // TOP 7 after the push, ST0 = 1.0 (exponent 0x3FFF, significand 1<<63).
        assert_eq!(
            u16::from_le_bytes([fx[2], fx[3]]) >> 11 & 7,
            7,
            "{mode:?} fld1 TOP"
        );
        assert_eq!(
            &fx[32..42],
            &[0, 0, 0, 0, 0, 0, 0, 0x80, 0xFF, 0x3F],
            "{mode:?} fld1 ST0"
        );
        let expected_cs = match mode {
            Mode::Real => layout::RM_SEG,
            Mode::Prot32 => layout::SEL_CODE32,
            Mode::Long64 => layout::SEL_CODE64,
        };
        assert_eq!(add.segs[1], expected_cs, "{mode:?} CS");
    }
}

fn known_case(mode: Mode, id: u32) -> Case {
    Case {
        id,
        mode,
        category: "known",
        insn: Instruction::default(),
        text: String::new(),
        gpr: [0; 16],
        rflags: 0x2,
        mem: [0; layout::SCRATCH_LEN],
        fx: None,
        undefined: Undefined::default(),
        raw: None,
        stack: None,
    }
}
