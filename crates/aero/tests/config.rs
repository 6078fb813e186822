//! `--config FILE.toml`: the machine options from a file, as `aero headless` and `aero run`
//! read them.

use std::path::Path;
use std::process::{Command, Output};

fn aero(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run aero")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `aero headless ARGS` runs the demo guest until it is ready and exits 0.
fn headless_reaches_the_demo(args: &[&str], dir: &Path) {
    let mut all = vec!["headless"];
    all.extend_from_slice(args);
    all.extend(["--until-serial", "AERO-DEMO-READY", "--timeout", "20"]);
    let out = aero(&all, dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn headless_takes_its_machine_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("vm.toml");
    // No disk in the file: the demo guest, with the file's memory size.
    std::fs::write(&cfg, "memory = 64\nboot = \"c\"\n").unwrap();
    let serial = dir.path().join("serial.txt");
    headless_reaches_the_demo(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--serial",
            serial.to_str().unwrap(),
        ],
        dir.path(),
    );

    // The memory size is the file's: out of range there is the usual error.
    std::fs::write(&cfg, "memory = 0\n").unwrap();
    let out = aero(&["headless", "--config", "vm.toml"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--memory must be between"),
        "{}",
        stderr(&out)
    );
    // ...unless the command line says otherwise.
    headless_reaches_the_demo(&["--config", "vm.toml", "-m", "64"], dir.path());
}

#[test]
fn file_paths_are_relative_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("vm")).unwrap();
    std::fs::write(dir.path().join("vm/vm.toml"), "hda = \"missing.img\"\n").unwrap();
    let out = aero(&["headless", "--config", "vm/vm.toml"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("vm/missing.img"), "{}", stderr(&out));
}

#[test]
fn unknown_keys_and_missing_files_are_one_sentence_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("vm.toml"), "memory = 512\nmemroy = 512\n").unwrap();
    for (cmd, file, needle) in [
        (
            "headless",
            "vm.toml",
            "vm.toml, line 2: unknown field `memroy`",
        ),
        ("run", "vm.toml", "vm.toml, line 2: unknown field `memroy`"),
        ("headless", "none.toml", "cannot read none.toml"),
    ] {
        let out = aero(&[cmd, "--config", file], dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains(needle), "{cmd}: {err}");
        assert_eq!(err.lines().count(), 1, "{cmd}: one sentence: {err}");
    }
}
