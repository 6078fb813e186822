//! USB with a real guest: Linux's `ehci_hcd`/`ehci-pci` take Aero's ICH9 EHCI function
//! and hand the full-speed devices on its ports to the UHCI companions, which `uhci_hcd`
//! drives; `usbhid`/`hid-generic` bind the tablet, keyboard and mouse, and `evdev` hands
//! their events to a reader in the guest. A monitor script moves and clicks the tablet
//! (`mouse_move_abs`, `click`) and types on the keyboard once the guest is listening; the
//! guest's recorded input events must be exactly those. A second guest gets a gamepad
//! plugged in while it runs (`gamepad_attach`), reads its buttons, sticks and hat through
//! `evdev` and `joydev`, and sees it pulled again.

mod common;

/// Modules from the Debian kernel of the amd64 boot image, in load order.
const MODULES: &[(&str, &str)] = &[
    ("usb-common", "kernel/drivers/usb/common/usb-common.ko"),
    ("usbcore", "kernel/drivers/usb/core/usbcore.ko"),
    ("ehci-hcd", "kernel/drivers/usb/host/ehci-hcd.ko"),
    ("ehci-pci", "kernel/drivers/usb/host/ehci-pci.ko"),
    ("uhci-hcd", "kernel/drivers/usb/host/uhci-hcd.ko"),
    ("hid", "kernel/drivers/hid/hid.ko"),
    ("usbhid", "kernel/drivers/hid/usbhid/usbhid.ko"),
    ("hid-generic", "kernel/drivers/hid/hid-generic.ko"),
    ("evdev", "kernel/drivers/input/evdev.ko"),
];

/// The body of the guest's /init: load the modules (EHCI before UHCI, as Linux wants, with
/// `ehci_hcd`'s debug messages on so the port handovers show in the kernel log), list the
/// USB devices (as lsusb would, from sysfs), record the tablet's and keyboard's evdev events while the host sends input,
/// then print them (24-byte `struct input_event`s as hex).
const INIT: &str = r#"for m in usb-common usbcore ehci-hcd ehci-pci uhci-hcd hid usbhid hid-generic evdev; do
    opts=
    [ $m = ehci-hcd ] && opts=dyndbg=+p
    insmod /lib/modules/$m.ko $opts || echo "AERO-USB-INSMOD-FAILED=$m"
done
# Wait for the three HID devices' event nodes (up to ~20 s of guest time).
count() { grep -l -i "aero" /sys/class/input/event*/device/name 2>/dev/null | wc -l; }
i=0
while [ "$(count)" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-USB-HCDS=$(ls /sys/bus/pci/drivers/uhci_hcd | grep -c '^0000:')"
echo "AERO-USB-EHCI=$(ls /sys/bus/pci/drivers/ehci-pci | grep -c '^0000:')"
dmesg | grep -o 'port [0-9] full speed --> companion' | sed 's/^/AERO-USB-HANDOVER=/'
for d in /sys/bus/usb/devices/*; do
    [ -e "$d/idVendor" ] || continue
    echo "AERO-USB-DEV=$(basename "$d") $(cat "$d/speed") $(cat "$d/idVendor"):$(cat "$d/idProduct") $(cat "$d/product" 2>/dev/null)"
done
for d in /sys/bus/usb/drivers/usbhid/*:*; do
    [ -e "$d" ] && echo "AERO-USB-USBHID=$(basename "$d")"
done
event_of() {
    for e in /sys/class/input/event*; do
        grep -q "$1" "$e/device/name" && echo "/dev/input/${e##*/}"
    done
}
tablet=$(event_of Tablet)
keyboard=$(event_of Keyboard)
echo "AERO-USB-EVENTS=tablet $tablet keyboard $keyboard"
cat "$tablet" >/tmp/tablet &
tp=$!
cat "$keyboard" >/tmp/keyboard &
kp=$!
sleep 0.5
echo "AERO-USB-READY"
# The host's script runs on that line; its events arrive within a second of guest time.
sleep 3
kill $tp $kp
od -An -tx1 -v -w24 /tmp/tablet | sed 's/^/AERO-USB-TABLET-EV=/'
od -An -tx1 -v -w24 /tmp/keyboard | sed 's/^/AERO-USB-KEYBOARD-EV=/'
echo "AERO-USB-DONE"
"#;

/// The `len`-byte records `od -tx1 -w<len>` printed on lines `PREFIX= xx xx ...`.
fn records<'a>(serial: &'a str, prefix: &'a str, len: usize) -> impl Iterator<Item = Vec<u8>> + 'a {
    serial
        .lines()
        .filter_map(move |l| l.strip_prefix(prefix))
        .map(move |hex| {
            let b: Vec<u8> = hex
                .split_whitespace()
                .map(|x| u8::from_str_radix(x, 16).unwrap())
                .collect();
            assert_eq!(b.len(), len, "{hex}");
            b
        })
}

/// (type, code, value) of the input events in lines `PREFIX= xx xx ...` (24 bytes each:
/// timeval, u16 type, u16 code, s32 value), without EV_SYN and EV_MSC.
fn events(serial: &str, prefix: &str) -> Vec<(u16, u16, i32)> {
    records(serial, prefix, 24)
        .map(|b| {
            (
                u16::from_le_bytes([b[16], b[17]]),
                u16::from_le_bytes([b[18], b[19]]),
                i32::from_le_bytes([b[20], b[21], b[22], b[23]]),
            )
        })
        .filter(|&(t, _, _)| t != 0 && t != 4)
        .collect()
}

const EV_KEY: u16 = 1;
const EV_ABS: u16 = 3;
const BTN_LEFT: u16 = 0x110;
const BTN_RIGHT: u16 = 0x111;

#[test]
fn linux_enumerates_the_hid_devices_and_reads_tablet_and_keyboard_input() {
    let dir = common::work_dir("usb-linux");
    let mut files = vec![(
        "init".to_string(),
        0o100755,
        common::guest_init(INIT).into_bytes(),
    )];
    files.extend(common::module_files(MODULES));
    let boot = common::linux_direct_with_files(&dir, "initrd-amd64.img", &files);

    // Positions are pixels of the 720x400 text screen.
    let script = dir.join("input.monitor");
    std::fs::write(
        &script,
        "wait-serial AERO-USB-READY\nmouse_move_abs 100 200\nclick 100 200\nclick 300 150 2\n\
         type ab\n",
    )
    .unwrap();
    let serial = dir.join("serial.txt");
    let mut args = vec![
        "headless",
        "--usb",
        "--monitor",
        script.to_str().unwrap(),
        "--serial",
        serial.to_str().unwrap(),
        "--until-serial",
        "AERO-USB-DONE",
        "--timeout",
        "150",
    ];
    args.extend(boot.iter().map(String::as_str));
    let out = common::run_aero(&args, &serial);
    let lines = |prefix: &str| -> Vec<&str> {
        out.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
    };
    assert!(lines("AERO-USB-INSMOD-FAILED=").is_empty(), "{out}");
    assert_eq!(
        lines("AERO-USB-HCDS="),
        ["3"],
        "the three UHCI companions bound"
    );
    assert_eq!(lines("AERO-USB-EHCI="), ["1"], "EHCI bound");
    // With CONFIGFLAG set the ports were EHCI's: the driver reset each full-speed device
    // and handed it to the companion (ports 1-3: tablet, keyboard, mouse).
    let mut handovers = lines("AERO-USB-HANDOVER=");
    handovers.sort_unstable();
    handovers.dedup();
    assert_eq!(
        handovers,
        (1..=3)
            .map(|p| format!("port {p} full speed --> companion"))
            .collect::<Vec<_>>(),
        "{out}"
    );
    // Root hubs (1d6b:0001 UHCI, 1d6b:0002 EHCI) and our three devices, at full speed.
    let devices = lines("AERO-USB-DEV=");
    for (product, id) in [
        ("Aero USB Tablet", "ae20:0001"),
        ("Aero USB Keyboard", "ae20:0002"),
        ("Aero USB Mouse", "ae20:0003"),
    ] {
        assert!(
            devices
                .iter()
                .any(|d| d.ends_with(&format!(" 12 {id} {product}"))),
            "{product} not enumerated: {devices:?}"
        );
    }
    assert_eq!(
        devices.iter().filter(|d| d.contains("1d6b:0001")).count(),
        3
    );
    assert_eq!(
        devices
            .iter()
            .filter(|d| d.contains(" 480 1d6b:0002"))
            .count(),
        1
    );
    assert_eq!(
        lines("AERO-USB-USBHID=").len(),
        3,
        "usbhid bound every device"
    );

    let tablet = events(&out, "AERO-USB-TABLET-EV=");
    let (x1, y1) = (
        i32::from(aero_machine::tablet_coordinate(100, 720)),
        i32::from(aero_machine::tablet_coordinate(200, 400)),
    );
    let (x2, y2) = (
        i32::from(aero_machine::tablet_coordinate(300, 720)),
        i32::from(aero_machine::tablet_coordinate(150, 400)),
    );
    assert_eq!(
        tablet,
        [
            (EV_ABS, 0, x1),
            (EV_ABS, 1, y1),
            (EV_KEY, BTN_LEFT, 1),
            (EV_KEY, BTN_LEFT, 0),
            (EV_ABS, 0, x2),
            (EV_ABS, 1, y2),
            (EV_KEY, BTN_RIGHT, 1),
            (EV_KEY, BTN_RIGHT, 0),
        ],
        "tablet events"
    );
    // KEY_A = 30, KEY_B = 48: press and release each.
    assert_eq!(
        events(&out, "AERO-USB-KEYBOARD-EV="),
        [
            (EV_KEY, 30, 1),
            (EV_KEY, 30, 0),
            (EV_KEY, 48, 1),
            (EV_KEY, 48, 0)
        ],
        "keyboard events"
    );
}

/// The gamepad guest's /init body after the modules: wait for the boot-time HID devices,
/// ask the host to plug the pad in, find its joystick and event nodes, record both while
/// the host presses and moves, print them, then watch the pad being pulled.
const GAMEPAD_INIT: &str = r#"
count() { grep -l -i "aero" /sys/class/input/event*/device/name 2>/dev/null | wc -l; }
i=0
while [ "$(count)" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-PAD-PLUG-ME"
pad_event() {
    for e in /sys/class/input/event*; do
        grep -q Gamepad "$e/device/name" 2>/dev/null && echo "/dev/input/${e##*/}"
    done
}
i=0
while [ -z "$(pad_event)" ] || ! [ -e /dev/input/js0 ]; do
    [ $i -lt 200 ] || break
    sleep 0.1; i=$((i + 1))
done
for d in /sys/bus/usb/devices/*; do
    [ -e "$d/idVendor" ] || continue
    echo "AERO-PAD-DEV=$(cat "$d/idVendor"):$(cat "$d/idProduct") $(cat "$d/product" 2>/dev/null)"
done
event=$(pad_event)
echo "AERO-PAD-NODES=$event $(cat /sys/class/input/js0/device/name)"
cat "$event" >/tmp/event &
ep=$!
cat /dev/input/js0 >/tmp/js &
jp=$!
sleep 0.5
echo "AERO-PAD-READY"
sleep 3
kill $ep $jp
od -An -tx1 -v -w24 /tmp/event | sed 's/^/AERO-PAD-EV=/'
od -An -tx1 -v -w8 /tmp/js | sed 's/^/AERO-PAD-JS=/'
echo "AERO-PAD-UNPLUG-ME"
i=0
while [ -e /dev/input/js0 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /dev/input/js0 ] || echo "AERO-PAD-GONE"
echo "AERO-PAD-DONE"
"#;

/// (type, number, value) of the joystick events in lines `PREFIX= xx ...` (8-byte
/// `struct js_event`s: u32 time, s16 value, u8 type, u8 number), init events included.
fn js_events(serial: &str, prefix: &str) -> Vec<(u8, u8, i16)> {
    records(serial, prefix, 8)
        .map(|b| (b[6], b[7], i16::from_le_bytes([b[4], b[5]])))
        .collect()
}

#[test]
fn linux_takes_a_hot_plugged_gamepad_and_reads_its_buttons_axes_and_hat() {
    let dir = common::work_dir("usb-gamepad");
    let mut modules = MODULES.to_vec();
    modules.push(("joydev", "kernel/drivers/input/joydev.ko"));
    let names: Vec<&str> = modules.iter().map(|(name, _)| *name).collect();
    let init = format!(
        "for m in {}; do\n    insmod /lib/modules/$m.ko || echo \"AERO-PAD-INSMOD-FAILED=$m\"\ndone\n{GAMEPAD_INIT}",
        names.join(" ")
    );
    let mut files = vec![(
        "init".to_string(),
        0o100755,
        common::guest_init(&init).into_bytes(),
    )];
    files.extend(common::module_files(&modules));
    let boot = common::linux_direct_with_files(&dir, "initrd-amd64.img", &files);

    let script = dir.join("input.monitor");
    std::fs::write(
        &script,
        "wait-serial AERO-PAD-PLUG-ME\ngamepad_attach 0\nwait-serial AERO-PAD-READY\n\
         gamepad_button 1 on\ngamepad_axis x 100\ngamepad_axis rz -127\ngamepad_hat right\n\
         gamepad_button 16 on\ngamepad_button 1 off\n\
         wait-serial AERO-PAD-UNPLUG-ME\ngamepad_detach 0\n",
    )
    .unwrap();
    let serial = dir.join("serial.txt");
    let mut args = vec![
        "headless",
        "--usb",
        "--monitor",
        script.to_str().unwrap(),
        "--serial",
        serial.to_str().unwrap(),
        "--until-serial",
        "AERO-PAD-DONE",
        "--timeout",
        "150",
    ];
    args.extend(boot.iter().map(String::as_str));
    let out = common::run_aero(&args, &serial);
    let lines = |prefix: &str| -> Vec<&str> {
        out.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
    };
    assert!(lines("AERO-PAD-INSMOD-FAILED=").is_empty(), "{out}");
    assert!(
        lines("AERO-PAD-DEV=").contains(&"ae20:0004 Aero USB Gamepad"),
        "gamepad not enumerated after the hot-plug: {out}"
    );
    assert!(
        lines("AERO-PAD-NODES=")
            .first()
            .is_some_and(|l| l.ends_with("Aero Aero USB Gamepad")),
        "joydev and evdev bound the pad: {out}"
    );

    // evdev: a Game Pad's buttons 1-16 are BTN_SOUTH (0x130) .. BTN_THUMBR (0x13F); the
    // hat is ABS_HAT0X/Y in -1..=1.
    const BTN_SOUTH: u16 = 0x130;
    const BTN_16: u16 = 0x13F;
    const ABS_X: u16 = 0x00;
    const ABS_RZ: u16 = 0x05;
    const ABS_HAT0X: u16 = 0x10;
    assert_eq!(
        events(&out, "AERO-PAD-EV="),
        [
            (EV_KEY, BTN_SOUTH, 1),
            (EV_ABS, ABS_X, 100),
            (EV_ABS, ABS_RZ, -127),
            (EV_ABS, ABS_HAT0X, 1),
            (EV_KEY, BTN_16, 1),
            (EV_KEY, BTN_SOUTH, 0),
        ],
        "gamepad evdev events"
    );
    // joydev: after its init events (type | 0x80) the same changes as joystick events:
    // buttons 0 and 15, axes numbered in evdev order (X 0, Y 1, Z 2, Rz 3, hat X 4, hat Y 5),
    // values scaled to -32767..=32767.
    let js = js_events(&out, "AERO-PAD-JS=");
    let live: Vec<(u8, u8, i16)> = js.iter().copied().filter(|e| e.0 & 0x80 == 0).collect();
    assert!(
        js.iter().any(|e| e.0 == 0x81) && js.iter().any(|e| e.0 == 0x82),
        "joydev's init events: {js:?}"
    );
    let [b1, x, rz, hat, b16, b1_up] = live[..] else {
        panic!("joystick events: {live:?}")
    };
    assert_eq!((b1, b16, b1_up), ((1, 0, 1), (1, 15, 1), (1, 0, 0)));
    assert!(x.0 == 2 && x.1 == 0 && x.2 > 20_000, "X axis: {x:?}");
    assert_eq!(rz, (2, 3, -32767), "Rz axis");
    assert_eq!(hat, (2, 4, 32767), "hat X");
    assert_eq!(lines("AERO-PAD-GONE").len(), 1, "the pad was unplugged");
}
