//! Records the Rust compiler's version (`_native.RUSTC_VERSION`) and the git commit the
//! module was built from (`_native.GIT_COMMIT`, empty when not built from a checkout) in
//! the module, for the provenance every summary.json carries (python/wscsim/provenance.py):
//! an installed wscsim has no checkout to ask at run time. Whether the tree differed from
//! the commit is not recorded: this script reruns when HEAD moves, not on every edit, so
//! it could not be kept true.

use std::process::Command;

fn output(cmd: &mut Command) -> Option<String> {
    cmd.output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
}

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    output(Command::new("git").arg("-C").arg(dir).args(args))
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(Command::new(rustc).arg("--version")).unwrap_or_default();
    println!("cargo:rustc-env=WSCSIM_RUSTC_VERSION={version}");
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=WSCSIM_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=build.rs");
    // A new commit or checkout moves HEAD (or the branch it names).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(refs) = git(&["rev-parse", "--symbolic-full-name", "HEAD"])
        .and_then(|r| git(&["rev-parse", "--git-path", &r]))
    {
        println!("cargo:rerun-if-changed={refs}");
    }
}
