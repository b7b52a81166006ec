//! [`TlsFiles`]: a certificate authority made for a test, and a certificate for `localhost`
//! (and 127.0.0.1) it signed, made with `openssl`, for servers the tests start with TLS.

#![allow(clippy::expect_used)] // test support: certificates that cannot be made fail the test

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::available;

/// A CA and a server certificate with its key, in a temporary directory removed on drop.
#[derive(Debug)]
pub struct TlsFiles {
    /// The CA's certificate (PEM): what clients trust.
    pub ca: PathBuf,
    /// The server's certificate (PEM), for `localhost` and `127.0.0.1`.
    pub cert: PathBuf,
    /// The server's private key (PEM).
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsFiles {
    /// Makes them; `None` (after saying why) when `openssl` is missing (under CI, a
    /// failure: see [`available`]).
    ///
    /// # Panics
    ///
    /// When `openssl` fails.
    pub fn make() -> Option<Self> {
        if !super::probe::answers("openssl", "version") {
            return available(Err(
                "openssl is not installed (it makes the test certificates; Debian: `apt-get \
                 install -y openssl`)"
                    .to_owned(),
            ));
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let cwd = dir.path();
        let openssl = |args: &[&str]| openssl(args, cwd);
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=agentscope test CA",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]);
        std::fs::write(
            cwd.join("ext.cnf"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .expect("writing the certificate's extensions");
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        Some(TlsFiles {
            ca: cwd.join("ca.crt"),
            cert: cwd.join("server.crt"),
            key: cwd.join("server.key"),
            _dir: dir,
        })
    }
}

fn openssl(args: &[&str], cwd: &Path) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
