//! `aero run` in a real X window: Xvfb as the display, xdotool for keys, ImageMagick's
//! `import` for screenshots, x11rb to close the window as a window manager would.
//! wgpu draws through Vulkan on Mesa's software rasteriser (lavapipe): no GPU needed.
//! tests/install-deps.sh installs all of them.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use aero::screenshot::{Image, Tolerance, assert_matches_golden, compare, read_png, write_png};

/// COM1 of the guest, in the test's directory.
const SERIAL: &str = "serial.txt";

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A private X server, stopped on drop.
struct Xvfb {
    child: Child,
    display: String,
    /// Kept open: Xvfb must never write into a closed pipe.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Xvfb {
    /// Starts the server (its messages go to `dir`/xvfb.log) and waits until it takes clients.
    fn start(dir: &Path) -> Xvfb {
        // -displayfd: the server picks a free display and prints its number once ready.
        // -noreset: no server reset when a short-lived client (xdotool) disconnects.
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1600x1000x24",
                "-nolisten",
                "tcp",
                "-noreset",
            ])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("xvfb.log")).unwrap())
            .spawn()
            .expect("Xvfb is missing: run `bash tests/install-deps.sh test`");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let number = line.trim();
        assert!(
            !number.is_empty(),
            "Xvfb did not start; see {}",
            dir.display()
        );
        let x = Xvfb {
            child,
            display: format!(":{number}"),
            _stdout: stdout,
        };
        wait_for("Xvfb to take clients", Duration::from_secs(10), || {
            x11rb::connect(Some(&x.display)).ok().map(drop)
        });
        x
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("DISPLAY", &self.display)
            .env_remove("WAYLAND_DISPLAY");
        c
    }

    /// Runs an X client tool and returns its stdout (None when it failed).
    fn tool(&self, program: &str, args: &[&str]) -> Option<String> {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM lets the server remove its socket; SIGKILL if it does not go.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `aero run`, killed on drop if still running.
struct Aero(Child);

impl Drop for Aero {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `aero run` on the Linux guest image, COM1 into `dir`/[`SERIAL`].
fn start_aero(x: &Xvfb, dir: &Path) -> Aero {
    start_guest(x, dir, Some(&image("linux-amd64.img")))
}

/// `aero run` on `disk` (None: the built-in demo guest), COM1 into `dir`/[`SERIAL`].
fn start_guest(x: &Xvfb, dir: &Path, disk: Option<&Path>) -> Aero {
    let child = x
        .command(env!("CARGO_BIN_EXE_aero"))
        .arg("run")
        .args(["--no-audio", "--no-gamepad", "-m", "512", "--snapshot"])
        .arg("--serial")
        .arg(dir.join(SERIAL))
        .args(disk)
        // The window says whether it draws with AeroGPU's device (`shared=...`).
        .env("AERO_LOG", "aero::run=info")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.txt")).unwrap())
        .spawn()
        .expect("start aero run");
    Aero(child)
}

fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The X window whose title matches `title` (a regex), once it exists.
fn wait_window(x: &Xvfb, aero: &mut Aero, dir: &Path, title: &str) -> u32 {
    wait_for("the window", Duration::from_secs(60), || {
        if let Some(status) = aero.0.try_wait().unwrap() {
            panic!("aero exited early ({status}): {}", stderr_of(dir));
        }
        x.tool("xdotool", &["search", "--name", title])?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    })
}

fn wait_exit(aero: &mut Aero, timeout: Duration) -> ExitStatus {
    wait_for("aero to exit", timeout, || aero.0.try_wait().unwrap())
}

fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default()
}

/// Share of pixels that are not (nearly) black.
fn lit_fraction(png: &Path) -> f64 {
    let img = aero::screenshot::read_png(png).unwrap();
    let lit = img
        .rgba
        .chunks(4)
        .filter(|p| p[0] > 40 || p[1] > 40 || p[2] > 40)
        .count();
    lit as f64 / (img.width as f64 * img.height as f64)
}

/// Asks the window to close the way a window manager's close button does.
fn close_window(display: &str, window: u32) {
    use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt, EventMask};
    let (conn, _) = x11rb::connect(Some(display)).expect("connect to Xvfb");
    let protocols = conn
        .intern_atom(false, b"WM_PROTOCOLS")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    let delete = conn
        .intern_atom(false, b"WM_DELETE_WINDOW")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    let event = ClientMessageEvent::new(32, window, protocols, [delete, 0, 0, 0, 0]);
    // Checked: the round trip makes the server handle the request before this connection
    // goes away (a request sent just before disconnecting can be dropped unprocessed).
    conn.send_event(false, window, EventMask::NO_EVENT, event)
        .unwrap()
        .check()
        .expect("send the close request");
}

#[test]
fn window_shows_the_guest_takes_host_keys_and_closes_cleanly() {
    let dir = out_dir("window-show-close");
    let x = Xvfb::start(&dir);
    let mut aero = start_aero(&x, &dir);

    let window = wait_window(&x, &mut aero, &dir, "^Aero - linux-amd64.img");
    // The guest's boot loader text appears in the window.
    let shot = dir.join("window.png");
    let lit = wait_for("guest text in the window", Duration::from_secs(60), || {
        x.tool("import", &["-window", "root", shot.to_str().unwrap()])?;
        let lit = lit_fraction(&shot);
        (lit > 0.002).then_some(lit)
    });
    eprintln!("window {window}: {:.2}% lit", lit * 100.0);
    // First window size: 720x400 text mode at the largest whole scale for 90% of 1600x1000.
    let geometry = x
        .tool("xdotool", &["getwindowgeometry", &window.to_string()])
        .unwrap();
    assert!(geometry.contains("1440x800"), "{geometry}");

    // Ctrl+Alt+S through the X keyboard saves the guest screen in the working directory.
    x.tool("xdotool", &["windowfocus", "--sync", &window.to_string()])
        .expect("focus the window");
    x.tool("xdotool", &["key", "--clearmodifiers", "ctrl+alt+s"])
        .expect("xdotool key");
    let saved = wait_host_screenshot(&dir);
    std::thread::sleep(Duration::from_millis(300));
    let guest = aero::screenshot::read_png(&saved).unwrap();
    assert_eq!((guest.width, guest.height), (720, 400), "guest screen size");
    assert!(lit_fraction(&saved) > 0.002, "saved guest screen is black");

    close_window(&x.display, window);
    let status = wait_exit(&mut aero, Duration::from_secs(30));
    assert!(
        status.success(),
        "closing the window: {status}; stderr: {}",
        stderr_of(&dir)
    );
}

/// The PNG that the Ctrl+Alt+S host key saved in the working directory `dir`.
fn wait_host_screenshot(dir: &Path) -> PathBuf {
    wait_for("the Ctrl+Alt+S screenshot", Duration::from_secs(20), || {
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("aero-"))
                    && p.extension().is_some_and(|e| e == "png")
            })
    })
}

/// A screenshot of `window` as X shows it (None while X cannot take one).
fn window_picture(x: &Xvfb, window: u32, path: &Path) -> Option<Image> {
    x.tool("import", &["-window", &window.to_string(), path.to_str()?])?;
    read_png(path).ok()
}

/// Waits until the window's picture, passed through `mask` (which blanks what moves),
/// matches `golden` (masked too), then checks it against the golden for good: a mismatch
/// fails with actual/expected/diff files in `dir`. `AERO_UPDATE_GOLDEN=1` writes the
/// masked picture as the golden once it holds still.
fn settled_picture(
    x: &Xvfb,
    window: u32,
    dir: &Path,
    golden: &Path,
    mask: impl Fn(&Image) -> Image,
) -> Image {
    let tol = Tolerance::default();
    let update = std::env::var_os("AERO_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let expected = read_png(golden).ok().map(|g| mask(&g));
    let path = dir.join("window.png");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last: Option<Image> = None;
    loop {
        let now = window_picture(x, window, &path).map(|p| mask(&p));
        let timed_out = Instant::now() >= deadline;
        if let Some(now) = now {
            let steady = last.as_ref() == Some(&now);
            let matches = || {
                expected
                    .as_ref()
                    .and_then(|e| compare(&now, e, tol).ok())
                    .is_some_and(|c| c.matches(tol))
            };
            if (if update { steady } else { matches() }) || timed_out {
                let reference = match (&expected, update) {
                    (Some(e), false) => {
                        let masked = dir.join(format!(
                            "{}.masked.png",
                            golden.file_stem().unwrap().to_string_lossy()
                        ));
                        write_png(&masked, e.width, e.height, &e.rgba).unwrap();
                        masked
                    }
                    _ => golden.to_path_buf(),
                };
                assert_matches_golden(&now, &reference, dir, tol).unwrap();
                return now;
            }
            last = Some(now);
        }
        assert!(!timed_out, "no screenshot of window {window}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// COM1 of the test in `dir` once it contains `needle`.
fn wait_serial(dir: &Path, needle: &str, timeout: Duration) -> String {
    let path = dir.join(SERIAL);
    let read = || String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
    let start = Instant::now();
    loop {
        let text = read();
        if text.contains(needle) {
            return text;
        }
        assert!(
            start.elapsed() < timeout,
            "no {needle:?} on COM1 after {timeout:?}: {text:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn demo_guest_in_the_window_takes_typed_keys() {
    let dir = out_dir("window-demo");
    let x = Xvfb::start(&dir);
    let mut aero = start_guest(&x, &dir, None);
    let window = wait_window(&x, &mut aero, &dir, "^Aero - demo");
    wait_serial(&dir, "AERO-DEMO-READY", Duration::from_secs(60));
    // One wgpu device for the executor and the window (lavapipe can present to Xvfb), so a
    // host-only present would be drawn from the executor's texture. (The machine runs
    // while the window makes its presenter: the line may come after the ready marker.)
    let drawing = wait_for("the presenter", Duration::from_secs(30), || {
        let log = stderr_of(&dir);
        log.lines()
            .find(|l| l.contains("drawing with wgpu"))
            .map(str::to_string)
    });
    assert!(
        drawing.contains("shared=true"),
        "the window does not draw with AeroGPU's device: {drawing}"
    );
    // The window opened at 2x for 720x400 text; 640x480 at 2x would not fit in 90% of the
    // 1600x1000 screen, so the demo's mode change leaves it at 1x: guest pixels 1:1.
    let geometry = wait_for("the window at 640x480", Duration::from_secs(20), || {
        let g = x.tool("xdotool", &["getwindowgeometry", &window.to_string()])?;
        g.contains("640x480").then_some(g)
    });
    eprintln!("{geometry}");
    // The same picture as headless (the demo tests' golden), bar aside. A copy, so that
    // AERO_UPDATE_GOLDEN=1 never rewrites the headless golden from the window.
    let headless = dir.join("demo-headless.png");
    std::fs::copy(golden("demo"), &headless).unwrap();
    let ready = settled_picture(&x, window, &dir, &headless, without_demo_bar);
    // The cube AeroGPU draws (wgpu executor, lavapipe here) turns in the window: its
    // box shows more than its background and changes from one capture to a later one.
    let cube_box = |img: &Image| {
        let (bx, by, size) = DEMO_MESH_BOX;
        (by..by + size)
            .flat_map(|row| {
                let at = ((row * img.width + bx) * 4) as usize;
                img.rgba[at..at + (size * 4) as usize].to_vec()
            })
            .collect::<Vec<u8>>()
    };
    let first = wait_for("a window capture", Duration::from_secs(20), || {
        window_picture(&x, window, &dir.join("cube-1.png"))
    });
    let background = [0x0A, 0x18, 0x38];
    let pixels = cube_box(&first);
    let drawn = pixels.chunks(4).filter(|p| p[..3] != background).count();
    let around = pixels.len() / 4 - drawn;
    assert!(
        drawn > 1000 && around > 1000,
        "no cube on its background in the window's box ({drawn} cube, {around} background pixels)"
    );
    wait_for(
        "the cube turning in the window",
        Duration::from_secs(20),
        || {
            let now = window_picture(&x, window, &dir.join("cube-2.png"))?;
            (cube_box(&now) != cube_box(&first)).then_some(())
        },
    );

    x.tool("xdotool", &["windowfocus", "--sync", &window.to_string()])
        .expect("focus the window");
    x.tool("xdotool", &["key", "--delay", "100", "a", "shift+b", "1"])
        .expect("xdotool key");
    let text = wait_serial(&dir, "AERO-DEMO-KEY=1\r\n", Duration::from_secs(20));
    // The demo's frame reports (every 16 frames) may fall between the keys.
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("AERO-DEMO-KEY="))
        .collect();
    assert_eq!(keys, ["a", "B", "1"], "{text:?}");
    let typed = settled_picture(
        &x,
        window,
        &dir,
        &golden("demo-window-typed"),
        without_demo_bar,
    );
    // Only the key panel's text row (logical rows 150..166, doubled) changed.
    let (n, rows) = differing_rows(&typed, &ready);
    assert!(
        n > 50 && rows.is_some_and(|(lo, hi)| lo >= 300 && hi < 332),
        "{n} pixels changed in rows {rows:?}"
    );

    close_window(&x.display, window);
    let status = wait_exit(&mut aero, Duration::from_secs(30));
    assert!(status.success(), "{status}; stderr: {}", stderr_of(&dir));
}

/// linux-amd64.img with the kernel told to run a shell as init (`rdinit=/bin/sh`) on the
/// VGA console (the last `console=`), written to `dir`. The boot loader's command line is
/// patched in place with one of the same length, so its FAT file keeps its size.
fn linux_shell_image(dir: &Path) -> PathBuf {
    const FROM: &[u8] = b"console=ttyS0,115200 console=tty0 loglevel=7 panic=-1";
    const TO: &[u8] = b"console=ttyS0 console=tty0 loglevel=7 rdinit=/bin/sh ";
    assert_eq!(FROM.len(), TO.len());
    let mut img = std::fs::read(image("linux-amd64.img")).unwrap();
    let found: Vec<usize> = img
        .windows(FROM.len())
        .enumerate()
        .filter(|(_, w)| *w == FROM)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "the syslinux command line of tests/images/build.sh is not in linux-amd64.img once"
    );
    img[found[0]..found[0] + FROM.len()].copy_from_slice(TO);
    let path = dir.join("linux-shell.img");
    std::fs::write(&path, img).unwrap();
    path
}

/// One Linux boot (minutes in real time) for the window's whole Linux story: typed commands
/// reach the guest shell, the screen matches its golden, and a guest power-off ends `aero
/// run` with exit status 0.
#[test]
fn linux_shell_in_the_window_runs_typed_commands_and_powers_off() {
    let dir = out_dir("window-linux-shell");
    let x = Xvfb::start(&dir);
    let disk = linux_shell_image(&dir);
    let mut aero = start_guest(&x, &dir, Some(&disk));
    let window = wait_window(&x, &mut aero, &dir, "^Aero - linux-shell.img");
    // The kernel logs to COM1 too; the shell reads the keyboard from here on (typed keys
    // wait in the tty until it does).
    wait_serial(
        &dir,
        "Run /bin/sh as init process",
        Duration::from_secs(600),
    );
    x.tool("xdotool", &["windowfocus", "--sync", &window.to_string()])
        .expect("focus the window");
    // Quiet kernel, clean screen, then a result only a shell that ran the line can print.
    let command = "busybox dmesg -n 1; busybox clear; busybox mount -t devtmpfs dev /dev; \
                   echo AERO-SHELL-$((6*7)) | busybox tee /dev/ttyS0";
    x.tool("xdotool", &["type", "--delay", "40", command])
        .expect("xdotool type");
    x.tool("xdotool", &["key", "Return"]).expect("xdotool key");
    wait_serial(&dir, "AERO-SHELL-42", Duration::from_secs(60));
    // 720x400 text at 2x: the result and the next prompt on a cleared screen.
    settled_picture(
        &x,
        window,
        &dir,
        &golden("linux-shell-window"),
        Image::clone,
    );

    x.tool("xdotool", &["type", "--delay", "40", "busybox poweroff -f"])
        .expect("xdotool type");
    x.tool("xdotool", &["key", "Return"]).expect("xdotool key");
    let status = wait_exit(&mut aero, Duration::from_secs(120));
    assert!(status.success(), "{status}; stderr: {}", stderr_of(&dir));
}

#[test]
fn no_display_points_to_headless() {
    let dir = out_dir("window-no-display");
    let img = image("linux-amd64.img");
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args([
            "run",
            "--no-audio",
            "--no-gamepad",
            "--snapshot",
            img.to_str().unwrap(),
        ])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("aero headless"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("aero:")).count(),
        1,
        "one sentence: {err}"
    );
}

#[test]
fn bad_arguments_are_one_sentence_and_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["run", "/nonexistent/disk.img"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/disk.img"), "{err}");
}

/// A window manager on the test display, stopped on drop.
struct WindowManager(Child);

impl Drop for WindowManager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A window manager resizing the window over and over (a live resize by its border,
/// fullscreen switches) must never stall the window: the surface may be out of date for a
/// while, and a frame that cannot be drawn is skipped, not retried forever. Afterwards the
/// window still draws the guest and closes cleanly.
#[test]
fn window_keeps_working_through_live_resizes_under_a_window_manager() {
    let dir = out_dir("window-resize");
    let x = Xvfb::start(&dir);
    let wm = x
        .command("openbox")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("openbox.log")).unwrap())
        .spawn()
        .expect("openbox is missing: run `bash tests/install-deps.sh test`");
    let _wm = WindowManager(wm);
    let mut aero = start_guest(&x, &dir, None);
    let window = wait_window(&x, &mut aero, &dir, "^Aero - demo");
    wait_serial(&dir, "AERO-DEMO-READY", Duration::from_secs(60));
    let id = window.to_string();
    // One xdotool run per resize: the window manager's resizes interleave with the
    // window's frames (with pixels 0.17 this froze the window within a few hundred).
    for i in 0..300u32 {
        let (w, h) = (300 + i * 37 % 900, 300 + i * 53 % 600);
        x.tool(
            "xdotool",
            &["windowsize", &id, &w.to_string(), &h.to_string()],
        );
    }
    x.tool("xdotool", &["windowsize", "--sync", &id, "800", "600"])
        .expect("final size");

    // Still drawing: the demo guest animates, so the window's picture keeps changing
    // (a window thread stuck in the draw call would leave it frozen). Checked without
    // keyboard focus, which the window manager may have given elsewhere.
    let shot = dir.join("window.png");
    let first = wait_for("a picture at 800x600", Duration::from_secs(20), || {
        window_picture(&x, window, &shot).filter(|p| (p.width, p.height) == (800, 600))
    });
    wait_for("the picture to change", Duration::from_secs(20), || {
        (window_picture(&x, window, &shot)? != first).then_some(())
    });

    close_window(&x.display, window);
    let status = wait_exit(&mut aero, Duration::from_secs(30));
    assert!(status.success(), "{status}; stderr: {}", stderr_of(&dir));
}
