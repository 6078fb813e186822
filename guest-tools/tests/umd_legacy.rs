//! The UMD's cached legacy D3D9 state (fixed-function and resource state the command stream
//! does not carry): C++ unit tests of the Set/Get round-trips, D3D9 defaults, bounds on
//! guest-chosen indices, and state blocks (record, snapshot by type, capture, apply).

mod common;

#[test]
fn umd_legacy_state_unit_tests_pass() {
    common::run_unit_tests(
        "test_umd_legacy",
        &[
            "umd/tests/test_umd_legacy.cpp",
            "umd/src/aerogpu_umd_legacy.cpp",
        ],
        true,
        false,
    )
    .unwrap();
}
