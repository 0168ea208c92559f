//! `read_file` with a shared spill store (team mode): a spill file another replica wrote is
//! fetched into this replica's spill folder and read like any other; a spill name that is
//! nowhere says to retry or rerun; nothing else is ever fetched.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_budget::{SharedSpills, SpillStore};
use toolgate_core::DynTool;
use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};
use toolgate_test_support::TempProject;

use crate::support::call;

/// One replica: its own checkout of the project, its spill folder at `.toolgate/spill`,
/// the shared store in `shared`.
fn replica(root: &Path, shared: &Path) -> (Arc<SpillStore>, Arc<dyn DynTool>) {
    fs_err::create_dir_all(root).unwrap();
    let spill_dir = root.join(".toolgate/spill");
    let url = format!("file://{}", shared.display());
    let store = Arc::new(
        SpillStore::new(&spill_dir, 1 << 20).with_shared(SharedSpills::from_url(&url).unwrap()),
    );
    let roots = Arc::new(Roots::new([root]).unwrap().with_spill_dir(&spill_dir));
    let read = builtin_fs_tools(roots, ReadLimits::default(), Some(Arc::clone(&store)))
        .into_iter()
        .find(|t| t.spec().name == "read_file")
        .unwrap();
    (store, read)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_fetches_a_spill_file_another_replica_wrote() {
    let tmp = TempProject::new();
    let base = tmp.root();
    let shared = base.join("bucket");
    let (one, _) = replica(&base.join("one"), &shared);
    let (_, read_two) = replica(&base.join("two"), &shared);

    let file = one.write("run_shell", b"alpha\nbeta\ngamma\n").unwrap();
    one.shared()
        .unwrap()
        .finish_uploads(Duration::from_secs(10))
        .await;
    let name = file.path.file_name().unwrap().to_str().unwrap().to_owned();
    let pointer = format!(".toolgate/spill/{name}");

    let out = call(&read_two, json!({"path": pointer, "offset": 2}))
        .await
        .unwrap();
    assert!(
        out.text.contains("beta") && out.text.contains("gamma") && !out.text.contains("alpha"),
        "{}",
        out.text
    );
    assert!(
        base.join("two").join(&pointer).is_file(),
        "kept on replica 2"
    );

    // A spill name that is nowhere: say what to do, fetch nothing.
    let nowhere = ".toolgate/spill/1700000000000-00001-0001-0123456789abcdef-x.txt";
    let err = call(&read_two, json!({"path": nowhere}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("read it again in a few seconds") && err.contains("rerun the command"),
        "{err}"
    );
    // Another name in the spill folder is a plain "not found", never a fetch.
    fs_err::write(shared.join("notes.txt"), "PLANTED").unwrap();
    let err = call(&read_two, json!({"path": ".toolgate/spill/notes.txt"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        !err.contains("PLANTED") && !err.contains("shared spill store"),
        "{err}"
    );
    assert!(!base.join("two/.toolgate/spill/notes.txt").exists());
}
