//! `toolhost publish` end to end: the real binary pushes the real `calc` component to a real
//! Debian `docker-registry` on 127.0.0.1, signing it with a key made by the real `minisign`;
//! the artifact is fetched back with toolhost-dist and its signature, over the package
//! statement `--statement-out` writes, checked by `minisign -V`.
//! A signature file that is not one is refused before anything is pushed.
//!
//! Peers (installed by `cargo xtask peers`): `docker-registry`, `minisign`. Missing: skipped
//! with a note outside CI, a failure in CI (`CI=true`).

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use toolhost_dist::{FetchOptions, Source, fetch, sha256_digest, verify_signature};
use toolhost_testkit::built_plugins;
use toolhost_testkit::minisign::Keys;
use toolhost_testkit::registry::DockerRegistry;

fn toolhost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env_remove("TOOLHOST_REGISTRY_USER")
        .output()
        .unwrap()
}

#[tokio::test]
async fn publish_signs_and_pushes_and_refuses_a_bad_signature_file() {
    let (Some(reg), Some(keys), Some(calc)) = (
        DockerRegistry::start().unwrap(),
        Keys::generate().unwrap(),
        built_plugins(&["calc.wasm"]).map(|d| d.join("calc.wasm")),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The component with its request file beside it, as a plugin author has them.
    let wasm_path = dir.path().join("calc.wasm");
    std::fs::copy(&calc, &wasm_path).unwrap();
    let request = "timeout_ms = 1000\n";
    std::fs::write(dir.path().join("calc.toml"), request).unwrap();
    let (public, secret) = (&keys.public_file, &keys.secret_file);

    // Hostile: a "signature" that is not one is refused, and nothing is pushed.
    let bogus = dir.path().join("bogus.minisig");
    std::fs::write(&bogus, "not a signature").unwrap();
    let target = format!("oci://{}/tools/calc:1.0", reg.addr);
    let wasm_arg = wasm_path.display().to_string();
    let out = toolhost(&[
        "publish",
        &wasm_arg,
        &target,
        "--signature",
        &bogus.display().to_string(),
        "--version",
        "1.0.0",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a minisign signature"), "{stderr}");
    assert!(
        fetch(&Source::parse(&target).unwrap(), &FetchOptions::default())
            .await
            .is_err(),
        "nothing was pushed"
    );

    // Hostile: a signed package with no version (the tag `1.0` is not one, the component
    // has no `version` metadata), a malformed version, an overlong one: each refused,
    // naming why, and nothing is pushed.
    let sign = secret.display().to_string();
    let long = format!("1.0.0-{}", "x".repeat(64));
    let cases: [(&[&str], &str); 3] = [
        (&[], "needs a release version"),
        (&["--version", "1.0"], "not a semantic version"),
        (&["--version", &long], "longer than 64"),
    ];
    for (extra, why) in cases {
        let mut args = vec!["publish", &wasm_arg, &target, "--sign", &sign];
        args.extend(extra.iter().copied());
        let out = toolhost(&args);
        assert!(!out.status.success(), "{extra:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{extra:?}: {stderr}");
    }
    assert!(
        fetch(&Source::parse(&target).unwrap(), &FetchOptions::default())
            .await
            .is_err(),
        "nothing was pushed"
    );

    // Good call: --sign with the minisign key, as release 1.0.0.
    let out = toolhost(&[
        "publish",
        &wasm_arg,
        &target,
        "--sign",
        &sign,
        "--version",
        "1.0.0",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let wasm = std::fs::read(&wasm_path).unwrap();
    assert!(stdout.contains(&sha256_digest(&wasm)), "{stdout}");

    let got = fetch(&Source::parse(&target).unwrap(), &FetchOptions::default())
        .await
        .unwrap();
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.request.as_deref(), Some(request));
    let sig = got.signature.expect("a signature layer");
    let shipped = got.statement.expect("a statement layer");
    // The signature is over the package statement, which `--statement-out` writes for an
    // offline signer: the real minisign accepts toolhost's signature over that file.
    let statement = dir.path().join("calc.statement");
    let out = toolhost(&[
        "publish",
        &wasm_arg,
        &target,
        "--statement-out",
        &statement.display().to_string(),
        "--version",
        "1.0.0",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&statement).unwrap();
    assert_eq!(
        text,
        format!(
            "toolhost package statement v2\nname: calc\nversion: 1.0.0\ncomponent: {}\nrequest: {}\n",
            sha256_digest(&wasm),
            sha256_digest(request.as_bytes())
        )
    );
    assert_eq!(shipped, text, "the pushed statement is the one signed");
    let sig_path = dir.path().join("calc.statement.minisig");
    std::fs::write(&sig_path, &sig).unwrap();
    let out = Command::new(&keys.minisign)
        .arg("-V")
        .arg("-p")
        .arg(public)
        .arg("-m")
        .arg(&statement)
        .output()
        .unwrap();
    assert!(out.status.success(), "minisign -V: {out:?}");
    let key = std::fs::read_to_string(public).unwrap();
    assert!(verify_signature(text.as_bytes(), &sig, &[key]).is_ok());

    // Without --version, the component's own `version` metadata names the release (a
    // custom section `version`, as `wasm-tools metadata add --version` writes it).
    let mut tagged = wasm.clone();
    let payload = [&[7u8][..], b"version", b"4.2.0"].concat();
    tagged.push(0);
    tagged.push(payload.len() as u8);
    tagged.extend_from_slice(&payload);
    std::fs::write(&wasm_path, &tagged).unwrap();
    let out = toolhost(&[
        "publish",
        &wasm_arg,
        "--statement-out",
        &statement.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&statement).unwrap();
    assert!(text.contains("\nversion: 4.2.0\n"), "{text}");
}
