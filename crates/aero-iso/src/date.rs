//! Timestamps in the two ISO9660 formats, from a Unix epoch (UTC, offset 0).

/// (year, month 1-12, day 1-31, hour, minute, second) of `epoch` seconds (UTC).
pub fn civil_from_epoch(epoch: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    // Days to civil date on the proleptic Gregorian calendar, counting 400-year eras
    // from 0000-03-01 so leap days fall at the end of each year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (secs / 3600) as u32,
        ((secs % 3600) / 60) as u32,
        (secs % 60) as u32,
    )
}

/// 7-byte directory record date (years since 1900, clamped to the format's range).
pub fn dir_date(epoch: i64) -> [u8; 7] {
    let (y, mo, d, h, mi, s) = civil_from_epoch(epoch);
    let y = (y - 1900).clamp(0, 255) as u8;
    [y, mo as u8, d as u8, h as u8, mi as u8, s as u8, 0]
}

/// 17-byte volume descriptor date "YYYYMMDDHHMMSScc" + GMT offset.
pub fn vd_date(epoch: i64) -> [u8; 17] {
    let (y, mo, d, h, mi, s) = civil_from_epoch(epoch);
    let text = format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}00",
        y.clamp(0, 9999),
        mo,
        d,
        h,
        mi,
        s
    );
    let mut out = [0u8; 17];
    out[..16].copy_from_slice(&text.as_bytes()[..16]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_epoch(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil_from_epoch(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil_from_epoch(1_700_000_000), (2023, 11, 14, 22, 13, 20));
        assert_eq!(civil_from_epoch(-1), (1969, 12, 31, 23, 59, 59));
        assert_eq!(&vd_date(1_700_000_000)[..16], b"2023111422132000");
        assert_eq!(dir_date(0), [70, 1, 1, 0, 0, 0, 0]);
    }
}
