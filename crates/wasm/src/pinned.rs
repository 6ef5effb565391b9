//! Sending a wasi:http request to an address the gate already vetted.
//!
//! Rule (docs/security.md, "Pinned connections"): a host name is resolved
//! once, by the gate, and every address is checked; the connection then goes to the
//! checked address. wasmtime-wasi-http's `default_send_request` takes only the URL and
//! resolves the name again (a second lookup that a rebinding DNS server can answer
//! differently), so this module does the same work with the address given: TCP connect,
//! TLS with the *name* as server name (certificates are still checked against the name,
//! with the same webpki roots wasmtime-wasi-http uses), then an HTTP/1.1 exchange with
//! hyper. Written here because wasmtime-wasi-http 48 has no connector hook.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::{Poll, ready};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// Connect and first-byte timeout when the guest set none (the call deadline still applies).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// The TLS client configuration: webpki roots, ring (the provider wasmtime-wasi-http
/// builds rustls with), HTTP/1.1 only.
fn tls() -> Result<tokio_rustls::TlsConnector, Error> {
    static CONFIG: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .ok()
        .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
    });
    match config {
        Some(c) => Ok(tokio_rustls::TlsConnector::from(c.clone())),
        None => Err(Error::TlsProtocolError),
    }
}

/// The boxed response and the connection's driver, as `WasiHttpHooks::send_request` wants.
pub(crate) type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

/// Sends `request` to `addr`; over TLS with server name `tls_name` when given.
pub(crate) async fn send(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    addr: SocketAddr,
    tls_name: Option<&str>,
) -> Result<Sent, Error> {
    let connect_timeout = options
        .and_then(|o| o.connect_timeout)
        .unwrap_or(DEFAULT_TIMEOUT);
    let first_byte_timeout = options
        .and_then(|o| o.first_byte_timeout)
        .unwrap_or(DEFAULT_TIMEOUT);
    let tcp = tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Connect)?;
    let stream: Box<dyn Io> = match tls_name {
        Some(name) => {
            let server_name = rustls::pki_types::ServerName::try_from(name.to_string())
                .map_err(|_| Error::HttpRequestUriInvalid)?;
            let tls = tokio::time::timeout(connect_timeout, tls()?.connect(server_name, tcp))
                .await
                .map_err(|_| Error::ConnectionTimeout)?
                .map_err(Error::Tls)?;
            Box::new(tls)
        }
        None => Box::new(tcp),
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)?
    .map_err(Error::Hyper)?;

    // Origin form on the wire (scheme and authority belong only in proxy requests).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    // Wait for the response while driving the connection, as default_send_request does.
    let mut send = pin!(tokio::time::timeout(
        first_byte_timeout,
        sender.send_request(request)
    ));
    let mut conn = Some(conn);
    let res = poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(Ok(r)) => Poll::Ready(r.map_err(Error::Hyper)),
        Poll::Ready(Err(_)) => Poll::Ready(Err(Error::ConnectionReadTimeout)),
        Poll::Pending => {
            let Some(c) = conn.as_mut() else {
                return Poll::Pending;
            };
            let done = ready!(Pin::new(c).poll(cx));
            conn = None;
            match done {
                Ok(()) => match send.as_mut().poll(cx) {
                    Poll::Ready(Ok(r)) => Poll::Ready(r.map_err(Error::Hyper)),
                    Poll::Ready(Err(_)) => Poll::Ready(Err(Error::ConnectionReadTimeout)),
                    Poll::Pending => Poll::Pending,
                },
                Err(e) => Poll::Ready(Err(Error::Hyper(e))),
            }
        }
    })
    .await?;
    let io = async move {
        match conn {
            Some(c) => c.await.map_err(Error::Hyper),
            None => Ok(()),
        }
    };
    Ok((
        res.map(|b| b.map_err(Error::Hyper).boxed_unsync()),
        Box::new(io),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn request(url: &str) -> http::Request<WasiBody> {
        let body = http_body_util::Empty::<bytes::Bytes>::new()
            .map_err(|_| Error::HttpRequestDenied)
            .boxed_unsync();
        http::Request::builder()
            .uri(url)
            .header(http::header::HOST, "pinned.invalid")
            .body(body)
            .unwrap()
    }

    /// Accepts one connection and returns its first bytes.
    async fn first_bytes(listener: tokio::net::TcpListener) -> Vec<u8> {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).await.unwrap();
        buf.truncate(n);
        buf
    }

    // `pinned.invalid` cannot resolve (RFC 6761): reaching the listener proves that the
    // connection went to the given address without a lookup.
    #[tokio::test]
    async fn https_goes_to_the_pinned_address_with_the_name_as_sni() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(first_bytes(listener));
        let sent = send(
            request("https://pinned.invalid/x"),
            None,
            addr,
            Some("pinned.invalid"),
        );
        // The listener closes after the ClientHello: the handshake fails, as it must.
        let (hello, res) = tokio::join!(server, sent);
        assert!(res.is_err());
        let hello = hello.unwrap();
        assert_eq!(hello.first(), Some(&0x16), "not a TLS handshake");
        assert!(
            hello.windows(14).any(|w| w == b"pinned.invalid"),
            "SNI missing"
        );
    }

    #[tokio::test]
    async fn http_goes_to_the_pinned_address_in_origin_form() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(first_bytes(listener));
        let sent = send(request("http://pinned.invalid/a?b=c"), None, addr, None);
        let (head, res) = tokio::join!(server, sent);
        assert!(res.is_err());
        let head = String::from_utf8_lossy(&head.unwrap()).into_owned();
        assert!(head.starts_with("GET /a?b=c HTTP/1.1\r\n"), "{head}");
        assert!(
            head.to_ascii_lowercase().contains("host: pinned.invalid"),
            "{head}"
        );
    }
}
