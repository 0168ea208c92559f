//! The config loader on arbitrary files: never panics; a file it accepts assembles into a
//! runtime or fails with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_config::{Flags, LoadOptions, load};
use toolgate_runtime::Runtime;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fuzz.toml");
    std::fs::write(&file, data).unwrap();
    let options = LoadOptions {
        project_dir: dir.path().to_path_buf(),
        user_file: None,
        explicit_file: Some(file),
        use_env: false,
        flags: Flags::default(),
        trust_file: None,
    };
    if let Ok(loaded) = load(&options) {
        let _ = Runtime::new(loaded.config, dir.path());
    }
});
