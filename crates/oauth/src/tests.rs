//! Tests of the OAuth store and callback listener (crate::oauth) against real files and
//! real sockets: hostile callbacks and files first, then the good case that must still
//! work.

use super::*;

#[test]
fn server_names_cannot_escape_the_store() {
    let store = OAuthStore::new("/tmp/x");
    for bad in ["", "../a", "a/b", ".hidden", "a\\b", "a b", "a\0"] {
        assert!(store.path(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        store.path("my-server_1.x").ok(),
        Some(PathBuf::from("/tmp/x/my-server_1.x.json"))
    );
}

#[test]
fn shown_escapes_and_bounds() {
    let s = shown(&format!("a\u{1b}[31m{}", "x".repeat(1000)));
    assert!(!s.contains('\u{1b}'));
    assert!(s.ends_with("..."));
    assert!(s.len() < 400);
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolhost-oauth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn credentials_are_written_0600_atomically_and_hostile_files_are_refused() {
    let dir = temp("store");
    let store = OAuthStore::new(dir.join("oauth"));
    let file = store.credential_store("srv").unwrap();
    // Hostile: a huge file and a file of garbage with terminal escapes.
    std::fs::create_dir_all(store.dir()).unwrap();
    let path = store.path("srv").unwrap();
    std::fs::write(&path, vec![b' '; (MAX_CREDENTIAL_FILE + 10) as usize]).unwrap();
    assert!(matches!(file.read(), Err(OAuthError::BadFile { .. })));
    std::fs::write(&path, "\u{1b}]0;pwned\u{7}{secret-token").unwrap();
    let err = file.read().unwrap_err().to_string();
    assert!(
        !err.contains("secret-token") && !err.contains('\u{1b}'),
        "{err}"
    );
    assert!(err.contains("toolhost mcp logout srv"), "{err}");
    // Good: save, mode 0600, no temporary file left, read back.
    let creds = StoredCredentials::new("client-1".into(), None, vec!["read".into()], Some(7));
    file.save(creds).await.unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let names: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let back = file.load().await.unwrap().unwrap();
    assert_eq!(back.client_id, "client-1");
    assert!(store.has("srv"));
    assert!(store.remove("srv").unwrap());
    assert!(!store.remove("srv").unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

async fn send(port: u16, head: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(head).await.unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer).await;
    answer
}

#[tokio::test]
async fn the_callback_listener_ignores_forged_callbacks_then_takes_the_right_one() {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let waiting =
        tokio::spawn(async move { wait_for_callback("srv", &listener, port, "good-state").await });
    // Hostile: a forged state, another path, a POST, a head without end that is too long.
    let a = send(
        port,
        b"GET /callback?code=evil&state=forged HTTP/1.1\r\n\r\n",
    )
    .await;
    assert!(a.starts_with("HTTP/1.1 400"), "{a}");
    let a = send(port, b"GET /other?code=x&state=good-state HTTP/1.1\r\n\r\n").await;
    assert!(a.starts_with("HTTP/1.1 404"), "{a}");
    let a = send(
        port,
        b"POST /callback?code=x&state=good-state HTTP/1.1\r\n\r\n",
    )
    .await;
    assert!(a.is_empty(), "{a}");
    let mut big = b"GET /callback?".to_vec();
    big.extend(std::iter::repeat_n(b'a', MAX_CALLBACK_REQUEST * 2));
    let _ = send(port, &big).await;
    assert!(!waiting.is_finished());
    // Good: the right state.
    let a = send(
        port,
        b"GET /callback?code=c0de&state=good-state HTTP/1.1\r\n\r\n",
    )
    .await;
    assert!(a.starts_with("HTTP/1.1 200"), "{a}");
    let url = waiting.await.unwrap().unwrap();
    assert!(url.contains("code=c0de"), "{url}");
}

#[tokio::test]
async fn a_refusal_from_the_authorization_server_is_shown_escaped() {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let waiting = tokio::spawn(async move { wait_for_callback("srv", &listener, port, "s").await });
    let a = send(
        port,
        b"GET /callback?state=s&error=access_denied&error_description=%1B%5B2Jno HTTP/1.1\r\n\r\n",
    )
    .await;
    assert!(a.starts_with("HTTP/1.1 400"), "{a}");
    let err = waiting.await.unwrap().unwrap_err().to_string();
    assert!(err.contains("access_denied"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
}
