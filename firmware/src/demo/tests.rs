use super::*;

#[test]
fn image_layout() {
    let disk = build_demo_disk().unwrap();
    assert_eq!(disk.len(), DEMO_DISK_SECTORS * SECTOR_SIZE);
    assert_eq!(&disk[510..512], &[0x55, 0xAA], "boot signature");
    // The partition table stays empty: the demo is a whole-disk boot sector.
    assert!(disk[0x1BE..0x1FE].iter().all(|&b| b == 0));
    // The boot sector asks for exactly the sectors the payload occupies.
    let used = disk.iter().rposition(|&b| b != 0).unwrap();
    let payload_sectors = used / SECTOR_SIZE;
    assert!(
        (1..=MAX_PAYLOAD_SECTORS).contains(&payload_sectors),
        "{payload_sectors} payload sectors"
    );
    let boot = &disk[..0x1BE];
    let count = payload_sectors as u8;
    // CHS fallback: MOV AX, 0200h | count.
    assert!(
        boot.windows(3).any(|w| w == [0xB8, count, 0x02]),
        "no AH=02h read of {count} sectors"
    );
    // EDD packet: PUSH count, PUSH 10h (size) right before MOV SI, SP.
    assert!(
        boot.windows(4).any(|w| w == [0x6A, count, 0x6A, 0x10]),
        "no EDD packet for {count} sectors"
    );
    // The payload carries its serial greeting and the ready marker.
    let payload = &disk[SECTOR_SIZE..(payload_sectors + 1) * SECTOR_SIZE];
    for needle in [
        &b"AERO-DEMO: booting"[..],
        b"AERO-DEMO-READY",
        b"AERO-DEMO-KEY=",
    ] {
        assert!(
            payload.windows(needle.len()).any(|w| w == needle),
            "{:?} missing",
            String::from_utf8_lossy(needle)
        );
    }
}

#[test]
fn image_is_deterministic() {
    let a = build_demo_disk().unwrap();
    let b = build_demo_disk().unwrap();
    assert!(a == b, "two builds differ");
    assert!(demo_disk_image() == a);
    assert!(demo_disk_image() == demo_disk_image());
}
