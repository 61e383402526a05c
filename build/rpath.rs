//! Build script shared by the crates whose binaries load libchdb.so: it records
//! where the engine lives in the binaries (rpath), so nothing needs
//! LD_LIBRARY_PATH. `$ORIGIN/../lib` also serves an installed layout
//! (bin/chingest beside lib/libchdb.so), which deploy/ uses.
fn main() {
    println!("cargo:rerun-if-env-changed=CHDB_LIB_DIR");
    if let Some(dir) = std::env::var_os("CHDB_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/../lib");
}
