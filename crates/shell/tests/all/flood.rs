//! A 1 GiB flood: memory stays bounded while every byte reaches the disk.

use crate::fixtures::{Env, field};

const GIB: u64 = 1 << 30;

/// A field of /proc/self/status, in KiB.
fn status_kib(key: &str) -> u64 {
    let status = fs_err::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key} in /proc/self/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_gigabyte_flood_keeps_memory_bounded_and_every_byte_on_disk() {
    let env = Env::alone();
    let before = status_kib("VmRSS:");
    // Reset the peak RSS so VmHWM afterwards is the peak during the flood (Linux >= 4.0).
    fs_err::write("/proc/self/clear_refs", "5").unwrap();
    let out = env
        .sh(&format!("head -c {GIB} /dev/zero | tr '\\0' x"))
        .await;
    let peak = status_kib("VmHWM:");
    let growth_mib = peak.saturating_sub(before) as f64 / 1024.0;
    assert!(!out.is_error, "{}", &out.text[..out.text.len().min(2000)]);
    assert!(
        growth_mib <= 64.0,
        "RSS grew by {growth_mib:.1} MiB (from {before} KiB to a peak of {peak} KiB)"
    );

    let stdout = field(&out, "stdout");
    assert_eq!(stdout["bytes"], GIB);
    assert_eq!(stdout["truncated"], true);
    let path = stdout["path"].as_str().unwrap().to_owned();
    assert_eq!(fs_err::metadata(&path).unwrap().len(), GIB);
    // Every byte is an `x`.
    let mut file = fs_err::File::open(&path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let xs = vec![b'x'; 1 << 20];
    let mut read = 0u64;
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        assert!(
            buf[..n] == xs[..n],
            "a byte other than `x` near offset {read}"
        );
        read += n as u64;
    }
    assert_eq!(read, GIB);
    // What the model sees stays small.
    assert!(out.text.chars().count() < 20_000);
    assert!(
        out.text.contains("1,073,741,824 bytes"),
        "{}",
        &out.text[..300]
    );
}
