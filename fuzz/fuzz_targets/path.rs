//! Path resolution on arbitrary model-supplied paths: never panics, and whatever it accepts
//! lies inside the root.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolgate_fs::{Access, Roots};

fn root() -> &'static (tempfile::TempDir, Roots) {
    static ROOT: OnceLock<(tempfile::TempDir, Roots)> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("src", dir.path().join("in")).unwrap();
        let roots = Roots::new([dir.path()]).unwrap();
        (dir, roots)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let (dir, roots) = root();
    let real_root = dir.path().canonicalize().unwrap();
    for access in [Access::Read, Access::Write] {
        if let Ok(path) = roots.resolve(input, access) {
            assert!(
                path.starts_with(&real_root),
                "{input:?} resolved outside: {path:?}"
            );
        }
    }
});
