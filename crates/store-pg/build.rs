//! Embedded migrations are read at compile time: rebuild when they change,
//! and publish a fingerprint of them so tests can name a template database
//! after exactly the migrations it holds.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new("../../migrations");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(root, &mut files);
    files.sort();
    // FNV-1a: stable across toolchains, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .into_owned();
        let content = fs::read(&file).unwrap_or_default();
        for byte in name.bytes().chain(content) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=SEALPOST_MIGRATIONS_FINGERPRINT={hash:016x}");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}
