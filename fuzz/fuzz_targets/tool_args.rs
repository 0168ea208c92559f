//! Every file tool's argument parsing and execution on a temp tree, with arbitrary JSON
//! arguments: never panics (a panic would surface as "failed internally"), never touches
//! anything outside the tree.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use toolgate_core::{
    CallContext, DispatchLimits, Dispatcher, Policy, RawArgs, Registry, Scope, StaticProvider,
};
use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};

struct Rig {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    dispatcher: Dispatcher,
}

fn rig() -> &'static Rig {
    static RIG: OnceLock<Rig> = OnceLock::new();
    RIG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\nlet x = 1;\n").unwrap();
        std::fs::write(dir.path().join("README.md"), "# fuzz\nhello\n").unwrap();
        let roots = Arc::new(Roots::new([dir.path()]).unwrap());
        let tools = builtin_fs_tools(roots, ReadLimits::default(), None);
        let registry = Registry::new();
        registry
            .register(None, Arc::new(StaticProvider::new("fs", tools)), 0)
            .unwrap();
        let dispatcher = Dispatcher::new(
            Arc::new(registry),
            Scope::global(),
            Policy::allow_all(),
            DispatchLimits::default(),
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Rig {
            _dir: dir,
            runtime,
            dispatcher,
        }
    })
}

const TOOLS: [&str; 6] = [
    "read_file",
    "list_dir",
    "search_files",
    "grep",
    "write_file",
    "edit_file",
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, args)) = data.split_first() else {
        return;
    };
    let name = TOOLS[usize::from(which) % TOOLS.len()];
    let args = String::from_utf8_lossy(args).into_owned();
    let rig = rig();
    let out = rig.runtime.block_on(rig.dispatcher.call(
        name,
        RawArgs::Text(args),
        CallContext::unattended(),
    ));
    // The dispatcher's words for a handler panic (the arguments may echo any text).
    assert!(
        !out.text.starts_with(&format!("error: `{name}` failed internally")),
        "{name}: {}",
        out.text
    );
});
