use std::os::unix::fs::PermissionsExt;

use rmcp::transport::auth::{OAuthTokenResponse, StoredCredentials};

use super::*;

fn token(access: &str, refresh: Option<&str>, expires_in: u64) -> OAuthTokenResponse {
    let mut json = serde_json::json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": expires_in,
    });
    if let Some(r) = refresh {
        json["refresh_token"] = serde_json::json!(r);
    }
    serde_json::from_value(json).unwrap()
}

fn entry(client: &str, issuer: &str, access: &str) -> IssuerEntry {
    let mut credentials = StoredCredentials::new(
        client.to_owned(),
        Some(token(access, Some("r1"), 3600)),
        vec!["read".to_owned()],
        Some(1_000),
    );
    credentials.issuer = Some(issuer.to_owned());
    IssuerEntry {
        credentials,
        client_secret: None,
        subject: Some("ada".to_owned()),
    }
}

const URL: &str = "https://mcp.example.com/mcp";

#[test]
fn file_records_are_private_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::in_dir(dir.path().join("oauth"), CredentialStoreMode::File).unwrap();
    assert_eq!(store.status(URL).unwrap(), AuthStatus::NeedsLogin);
    store
        .update(URL, |r| {
            r.issuers.insert(
                "https://as.example.com".to_owned(),
                entry("c1", "https://as.example.com", "a1"),
            );
            r.current = Some("https://as.example.com".to_owned());
        })
        .unwrap();

    let file = store.file(URL);
    let mode = fs_err::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "token file must be owner-only");
    let dir_mode = fs_err::metadata(dir.path().join("oauth"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    // The file name is a digest: the URL itself is not in the folder listing.
    assert!(
        !file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("example")
    );

    let record = store.load(URL).unwrap();
    assert_eq!(record.url, URL);
    assert_eq!(record.current_entry().unwrap().credentials.client_id, "c1");
    assert_eq!(
        store.status(URL).unwrap(),
        AuthStatus::LoggedIn {
            subject: Some("ada".to_owned()),
            expires_at: Some(4_600),
            refreshable: true,
        }
    );

    assert!(store.forget(URL).unwrap());
    assert!(!file.exists(), "logout deletes the record");
    assert!(!store.forget(URL).unwrap());
    assert_eq!(store.status(URL).unwrap(), AuthStatus::NeedsLogin);
}

#[test]
fn records_are_per_url_and_per_issuer() {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::in_dir(dir.path().to_path_buf(), CredentialStoreMode::File).unwrap();
    store
        .update(URL, |r| {
            r.issuers.insert(
                "https://old-as".to_owned(),
                entry("c1", "https://old-as", "a-old"),
            );
            r.issuers.insert(
                "https://new-as".to_owned(),
                entry("c2", "https://new-as", "a-new"),
            );
            r.current = Some("https://new-as".to_owned());
        })
        .unwrap();
    let record = store.load(URL).unwrap();
    assert_eq!(record.issuers.len(), 2);
    assert_eq!(record.current_entry().unwrap().credentials.client_id, "c2");
    assert_eq!(
        record.issuers["https://old-as"].credentials.client_id, "c1",
        "an issuer's entry keeps its own client"
    );
    assert_eq!(
        store.status("https://other.example.com/mcp").unwrap(),
        AuthStatus::NeedsLogin
    );
}

#[test]
fn a_damaged_record_says_how_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::in_dir(dir.path().to_path_buf(), CredentialStoreMode::File).unwrap();
    fs_err::write(store.file(URL), "{not json").unwrap();
    let e = store.load(URL).unwrap_err().to_string();
    assert!(e.contains("toolgate mcp logout"), "{e}");
}

#[test]
fn the_stamp_changes_when_someone_logs_in() {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::in_dir(dir.path().to_path_buf(), CredentialStoreMode::File).unwrap();
    assert_eq!(store.stamp(URL), None);
    store
        .update(URL, |r| {
            r.issuers.insert(String::new(), entry("c1", "", "a1"));
        })
        .unwrap();
    let first = store.stamp(URL);
    assert!(first.is_some());
    store
        .update(URL, |r| {
            r.issuers
                .insert(String::new(), entry("c1", "", "a-second-longer"));
        })
        .unwrap();
    assert_ne!(store.stamp(URL), first);
}

/// The keyring path, on the Linux kernel keyutils backend (no desktop session needed; a
/// kernel that refuses keyrings, as some container sandboxes do, fails this test).
#[cfg(all(target_os = "linux", feature = "keyring"))]
#[test]
fn keyutils_keyring_round_trips() {
    // keyring's keyutils backend uses the session keyring without creating one; a test
    // process (nextest, CI) may have none.
    linux_keyutils::KeyRing::from_special_id(linux_keyutils::KeyRingIdentifier::Session, true)
        .expect("the kernel keyutils keyring answers (a session keyring could be made)");
    os_keyring::probe(KeyringKind::Keyutils).expect("the kernel keyutils keyring answers");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("https://keyring-test.invalid/{}", std::process::id());
    let store = TokenStore::with_keyring(dir.path().to_path_buf(), KeyringKind::Keyutils);
    assert_eq!(store.describe(), "the OS credential store");
    store
        .update(&url, |r| {
            r.issuers.insert(String::new(), entry("c1", "", "a1"));
        })
        .unwrap();
    assert!(
        !store.file(&url).exists(),
        "keyring records never touch the file"
    );
    assert!(matches!(
        store.status(&url).unwrap(),
        AuthStatus::LoggedIn { .. }
    ));
    assert!(store.stamp(&url).is_some());
    assert!(store.forget(&url).unwrap());
    assert_eq!(store.status(&url).unwrap(), AuthStatus::NeedsLogin);
}
