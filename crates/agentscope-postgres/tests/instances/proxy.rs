//! A TCP proxy between a store and the test's PostgreSQL, to cut a holder off the way a
//! network does: it forwards until told otherwise, then resets the next connection that
//! sends anything (an RST, as a dropped NAT entry or a restarted middlebox gives), and
//! from then on black-holes: it accepts connections and takes what they send, and never
//! answers (as a partition that drops packets does), so the client waits. Or it pauses:
//! nothing passes either way until it forwards again, and then all of it does (as a
//! stalled server or a healing partition).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the proxy does with what a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Forward both ways.
    Forward,
    /// Reset the connection that sends next, then black-hole.
    ResetNext,
    /// Take what clients send, never forward it, never answer.
    BlackHole,
    /// Hold everything, both ways, until the mode changes.
    Pause,
}

/// The proxy, listening on 127.0.0.1; stops when dropped.
pub(crate) struct Proxy {
    address: SocketAddr,
    mode: Arc<Mutex<Mode>>,
    resets: Arc<Mutex<usize>>,
    accepts: JoinHandle<()>,
}

impl Proxy {
    /// A proxy to `upstream`, forwarding.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mode = Arc::new(Mutex::new(Mode::Forward));
        let resets = Arc::new(Mutex::new(0));
        let accepts = {
            let mode = Arc::clone(&mode);
            let resets = Arc::clone(&resets);
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    tokio::spawn(serve(
                        client,
                        upstream,
                        Arc::clone(&mode),
                        Arc::clone(&resets),
                    ));
                }
            })
        };
        Self {
            address,
            mode,
            resets,
            accepts,
        }
    }

    /// The port clients connect to.
    pub(crate) fn port(&self) -> u16 {
        self.address.port()
    }

    /// Changes what the proxy does from now on.
    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }

    /// A handle that changes the proxy's mode from another task.
    pub(crate) fn handle(&self) -> ModeHandle {
        ModeHandle(Arc::clone(&self.mode))
    }

    /// How many connections it has reset.
    pub(crate) fn resets(&self) -> usize {
        *self.resets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Changes a [`Proxy`]'s mode (see [`Proxy::handle`]).
pub(crate) struct ModeHandle(Arc<Mutex<Mode>>);

impl ModeHandle {
    /// Changes what the proxy does from now on.
    pub(crate) fn set(&self, mode: Mode) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accepts.abort();
    }
}

/// One client connection.
async fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    mode: Arc<Mutex<Mode>>,
    resets: Arc<Mutex<usize>>,
) {
    let current = || *mode.lock().unwrap_or_else(PoisonError::into_inner);
    let unpaused = || async {
        while current() == Mode::Pause {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    };
    unpaused().await;
    let mut buffer = vec![0u8; 64 * 1024];
    if current() == Mode::BlackHole {
        // Accepted, never answered.
        while matches!(client.read(&mut buffer).await, Ok(n) if n > 0) {}
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let mut from_server = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            read = client.read(&mut buffer) => {
                let Ok(n) = read else { return };
                if n == 0 {
                    return;
                }
                unpaused().await;
                match current() {
                    Mode::Forward | Mode::Pause => {
                        if server.write_all(&buffer[..n]).await.is_err() {
                            return;
                        }
                    }
                    Mode::ResetNext => {
                        *mode.lock().unwrap_or_else(PoisonError::into_inner) = Mode::BlackHole;
                        *resets.lock().unwrap_or_else(PoisonError::into_inner) += 1;
                        // Closing with a zero linger sends an RST.
                        let _ = client.set_zero_linger();
                        return;
                    }
                    // Taken, never forwarded.
                    Mode::BlackHole => {}
                }
            }
            read = server.read(&mut from_server) => {
                let Ok(n) = read else { return };
                unpaused().await;
                if n == 0 || current() == Mode::BlackHole {
                    if n == 0 {
                        return;
                    }
                    continue;
                }
                if client.write_all(&from_server[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
