//! The UMD's GetCaps through the adapter table: D3DCAPS9, formats, multisample levels,
//! query types and DirectDraw caps, checked for consistency with what the translation core
//! and the DDI layer accept (shader versions, limits, formats, queries, MSAA) and for the
//! caps DWM's D3D9Ex composition relies on. (The x86 layout asserts of D3DCAPS9 and the
//! DDI structs are compiled by the i686 mingw build the PE tests run.)

mod common;

#[test]
fn getcaps_is_consistent_with_the_core_and_the_device_table() {
    common::run_unit_tests(
        "test_umd_caps",
        &[
            "umd/tests/test_umd_caps.cpp",
            "umd/src/aerogpu_umd_caps.cpp",
            "umd/src/aerogpu_umd_ddi.cpp",
            "umd/src/aerogpu_umd_core.cpp",
            "umd/src/aerogpu_umd_core_draw.cpp",
            "umd/src/aerogpu_umd_core_copy.cpp",
            "umd/src/aerogpu_umd_legacy.cpp",
            "umd/src/aerogpu_umd_ff.cpp",
        ],
        true,
        false,
    )
    .unwrap();
}
