//! The `batchkv` command-line tool.

fn main() {
    println!("batchkv {}", env!("CARGO_PKG_VERSION"));
}
