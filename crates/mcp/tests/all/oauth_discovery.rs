//! OAuth discovery against hostile servers of the 2025-03-26 kind (no protected-resource
//! metadata; the authorization server metadata at the root of the MCP server's origin):
//! metadata whose issuer or endpoints leave that origin is refused before anything is
//! registered or any browser is sent anywhere; then the same server with metadata that
//! stays on its origin gets past discovery. The good end-to-end login is the
//! conformance suite's `auth/2025-03-26-oauth-metadata-backcompat` (cli/tests/all/conformance.rs).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolhost_mcp::oauth::{LoginOptions, OAuthError, OAuthStore, login};

/// What the fake server's root metadata says, given its own address.
type Metadata = fn(SocketAddr) -> String;

/// A raw HTTP/1.1 server: `POST /mcp` gets 401 with a bare `Bearer` challenge, the root
/// `/.well-known/oauth-authorization-server` gets `metadata`, everything else 404. It
/// records the request lines it saw.
async fn legacy_server(metadata: Metadata) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let line = head.lines().next().unwrap_or("").to_string();
                log.lock().unwrap().push(line.clone());
                let (status, extra, body) = if line.starts_with("POST /mcp") {
                    (
                        "401 Unauthorized",
                        "WWW-Authenticate: Bearer\r\n",
                        String::new(),
                    )
                } else if line.starts_with("GET /.well-known/oauth-authorization-server ") {
                    (
                        "200 OK",
                        "Content-Type: application/json\r\n",
                        metadata(addr),
                    )
                } else {
                    ("404 Not Found", "", String::new())
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (addr, seen)
}

async fn try_login(addr: SocketAddr, tag: &str) -> Result<(), OAuthError> {
    let dir = std::env::temp_dir().join(format!("th-oauth-disc-{tag}-{}", std::process::id()));
    let store = OAuthStore::new(&dir);
    let options = LoginOptions {
        headless: true,
        timeout: Duration::from_secs(5),
        ..Default::default()
    };
    let r = login(
        "legacy",
        &format!("http://{addr}/mcp"),
        &store,
        &options,
        |_| {},
    )
    .await;
    assert!(
        !store.has("legacy"),
        "nothing may be stored after a refused discovery"
    );
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn refused_discovery(r: Result<(), OAuthError>) -> String {
    match r {
        Err(
            e @ OAuthError::Flow {
                step: "discovery", ..
            },
        ) => e.to_string(),
        other => panic!("expected a refused discovery, got {other:?}"),
    }
}

#[tokio::test]
async fn legacy_metadata_that_leaves_the_servers_origin_is_refused_then_good_metadata_passes() {
    // The issuer names another origin.
    let (addr, seen) = legacy_server(|a| {
        format!(
            r#"{{"issuer":"http://127.0.0.1:1/oauth","authorization_endpoint":"http://{a}/oauth/authorize","token_endpoint":"http://{a}/oauth/token","registration_endpoint":"http://{a}/oauth/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}}"#
        )
    })
    .await;
    let e = refused_discovery(try_login(addr, "issuer").await);
    assert!(e.contains("RFC 8414"), "{e}");
    let asked = seen.lock().unwrap().clone();
    assert!(
        !asked.iter().any(|l| l.contains("/oauth/")),
        "no endpoint of refused metadata may be used: {asked:?}"
    );

    // Same-origin issuer, but the endpoints send the user (and the code) elsewhere.
    let (addr, seen) = legacy_server(|a| {
        format!(
            r#"{{"issuer":"http://{a}/oauth","authorization_endpoint":"https://evil.example/authorize","token_endpoint":"http://{a}/oauth/token","registration_endpoint":"https://evil.example/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}}"#
        )
    })
    .await;
    let e = refused_discovery(try_login(addr, "endpoints").await);
    assert!(e.contains("issuer"), "{e}");
    assert!(!seen.lock().unwrap().iter().any(|l| l.contains("/oauth/")));

    // The same server whose metadata stays on its origin gets past discovery: it goes
    // on to register at its own endpoint (which this fake server does not offer).
    let (addr, seen) = legacy_server(|a| {
        format!(
            r#"{{"issuer":"http://{a}/oauth","authorization_endpoint":"http://{a}/oauth/authorize","token_endpoint":"http://{a}/oauth/token","registration_endpoint":"http://{a}/oauth/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}}"#
        )
    })
    .await;
    match try_login(addr, "good").await {
        Err(OAuthError::Flow { step, .. }) => assert_eq!(step, "registration"),
        other => panic!("expected discovery to pass and registration to fail: {other:?}"),
    }
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("POST /oauth/register")),
        "{:?}",
        seen.lock().unwrap()
    );
}
