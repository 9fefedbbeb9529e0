//! Copies the web client's build (`web/packages/web/dist`, made by
//! `npm run build` in `web/`) into `$OUT_DIR/app`, which `web_app` embeds.
//! Without a build the directory stays empty: the API builds without Node,
//! and `/app/` then says how to get the client.

use std::io;
use std::path::Path;

fn main() -> io::Result<()> {
    let manifest =
        std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| missing("CARGO_MANIFEST_DIR"))?;
    let out = std::env::var_os("OUT_DIR").ok_or_else(|| missing("OUT_DIR"))?;
    let web = Path::new(&manifest).join("../../web/packages/web");
    let dist = web.join("dist");
    let target = Path::new(&out).join("app");

    // Rerun when the build changes; without one, when the package changes
    // (a new `dist/` shows there). A path that does not exist would rerun
    // this script, and rebuild this crate, on every cargo command.
    let watched = if dist.is_dir() {
        dist.clone()
    } else if web.is_dir() {
        web
    } else {
        Path::new(&manifest).join("build.rs")
    };
    println!("cargo:rerun-if-changed={}", watched.display());

    if target.exists() {
        std::fs::remove_dir_all(&target)?;
    }
    std::fs::create_dir_all(&target)?;
    // Only a finished build: Vite writes index.html last.
    if dist.join("index.html").is_file() {
        copy_tree(&dist, &target)?;
    }
    Ok(())
}

fn missing(variable: &str) -> io::Error {
    io::Error::other(format!("cargo did not set {variable}"))
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let destination = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&destination)?;
            copy_tree(&path, &destination)?;
        } else {
            std::fs::copy(&path, &destination)?;
        }
    }
    Ok(())
}
