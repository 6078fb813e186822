//! The KMD's OS-independent core, compiled natively: C unit tests (64- and 32-bit), and
//! its submission path replayed into the Rust AeroGPU device.

mod common;

use aero_guest_tools::replay::{self, ReplayError};

const KMD_PORTABLE: &str = "kmd/portable/agpu_kmd_portable.c";

#[test]
fn kmd_portable_unit_tests_pass() {
    for m32 in [false, true] {
        let Some(out) = common::run_unit_tests(
            "test_kmd_portable",
            &["kmd/tests/test_kmd_portable.c", KMD_PORTABLE],
            false,
            m32,
        ) else {
            continue;
        };
        let checks: u32 = out.split_whitespace().next().unwrap().parse().unwrap();
        assert!(checks > 100, "suspiciously few checks: {out}");
    }
}

fn scenario_trace(case: &str) -> Vec<u8> {
    let exe = common::build(
        "kmd_scenario",
        &[
            "tests_host/kmd_scenario.c",
            "tests_host/agpu_trace.c",
            KMD_PORTABLE,
        ],
        false,
        false,
    )
    .unwrap();
    let path = common::out_dir().join(format!("kmd_{case}.trace"));
    common::run(&exe, &[case, path.to_str().unwrap()]);
    std::fs::read(&path).unwrap()
}

#[test]
fn kmd_submissions_run_on_the_device_model() {
    let out = replay::replay(&scenario_trace("ok")).unwrap();
    out.check().unwrap();
    assert_eq!(out.expected.completed_fence, 12);
    assert_eq!(out.completed_fence, 12);
    assert_eq!(out.error.count, 0);
    // Every packet was accepted: 3 (resources) + 2 (copy) + 10 * 2 (flush + present).
    assert_eq!(out.stats.packets, 25);
    assert_eq!(out.stats.failed_submissions, 0);
    // Scanout programmed by the portable code is what the device latched.
    let so = out.device.scanout();
    assert_eq!((so.width, so.height, so.pitch_bytes), (1024, 768, 4096));
}

#[test]
fn readonly_allocation_blocks_writeback() {
    let out = replay::replay(&scenario_trace("readonly")).unwrap();
    out.check().unwrap();
    assert_eq!(out.error.count, 1);
    assert_eq!(out.error.code, 9, "AEROGPU_ERROR_READONLY");
    assert_eq!(out.stats.failed_submissions, 1);
    assert_eq!(out.error.fence, 2, "the copy submission is the one refused");
    // A failed submission still completes its fence.
    assert_eq!(out.completed_fence, 12);
}

#[test]
fn replay_rejects_malformed_traces() {
    assert_eq!(replay::replay(b"nope").unwrap_err(), ReplayError::BadHeader);
    let mut t = b"AGTR\x01\0\0\0".to_vec();
    assert_eq!(replay::replay(&t).unwrap_err(), ReplayError::NoEnd);
    t.push(b'M');
    t.extend_from_slice(&u64::MAX.to_le_bytes());
    t.extend_from_slice(&4u32.to_le_bytes());
    t.extend_from_slice(&[1, 2, 3, 4]);
    t.push(b'E');
    assert!(matches!(
        replay::replay(&t),
        Err(ReplayError::MemoryOutOfRange { .. })
    ));
    let t = b"AGTR\x01\0\0\0Q".to_vec();
    assert!(matches!(
        replay::replay(&t),
        Err(ReplayError::UnknownRecord { tag: b'Q', .. })
    ));
}
