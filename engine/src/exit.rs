//! The process ends without tearing the engine down.
//!
//! Tearing libchdb down at `exit` — closing its last connections, or running
//! its C++ destructors — races the background threads it cannot stop (merges,
//! cleanup, the scheduler's pools): test binaries died with SIGSEGV after
//! every test had passed. Nothing is lost by skipping it: every statement
//! that returned is durable (`fsync_after_insert`), and the engine recovers
//! from an abandoned state as it does from kill -9.
//!
//! Two things keep the teardown from running:
//! - [`arm`] (called once an engine opened, so after libchdb's load-time
//!   constructors registered their destructors) registers an `on_exit`
//!   handler that flushes C stdio and `_exit`s with the status. `exit` runs
//!   handlers in reverse order of registration, so every handler registered
//!   before it — libchdb's load-time destructors among them — never runs.
//! - libchdb registers more destructors later, the first time a function
//!   with a C++ `static` local runs (a sandbox test run registered 20 after
//!   the engine opened). Those would run *before* the handler. This crate
//!   defines `__cxa_atexit`, the C++ runtime's registration entry point; the
//!   executable's definition is the one the dynamic linker binds libchdb's
//!   calls to. It passes every registration on to the C library, except, once
//!   armed, a registration from libchdb itself: dropped, because the process
//!   never runs it anyway ([`dropped_engine_destructors`] counts them).

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

/// Set once [`arm`] registered the exit handler.
static ARMED: AtomicBool = AtomicBool::new(false);
/// libchdb's destructors not registered since [`arm`].
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// The C library's `__cxa_atexit`, found once with `dlsym(RTLD_NEXT)`.
static NEXT_CXA_ATEXIT: AtomicUsize = AtomicUsize::new(0);

type CxaAtexit =
    unsafe extern "C" fn(extern "C" fn(*mut c_void), *mut c_void, *mut c_void) -> c_int;

extern "C" {
    /// glibc's exit hook that is handed the exit status (`atexit`'s is not).
    fn on_exit(hook: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

/// Makes `exit` end the process without the engine's teardown (module doc).
/// Idempotent; call after libchdb loaded and an engine opened.
pub fn arm() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registering a plain `extern "C" fn` with no captured state.
        let registered = unsafe { on_exit(exit_without_engine_teardown, std::ptr::null_mut()) };
        if registered == 0 {
            ARMED.store(true, Ordering::Release);
        }
    });
}

/// How many destructors libchdb asked to run at exit since [`arm`], and
/// that were dropped instead.
pub fn dropped_engine_destructors() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

extern "C" fn exit_without_engine_teardown(status: c_int, _: *mut c_void) {
    // SAFETY: flushing C stdio and `_exit` are valid at any point of `exit`.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(status);
    }
}

/// Whether `dso` (a registration's `__dso_handle`, an address inside the
/// object that registered) lies in libchdb.
fn is_engine_object(dso: *mut c_void) -> bool {
    if dso.is_null() {
        return false;
    }
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(dso, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dladdr returned a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
    path.rsplit(|b| *b == b'/')
        .next()
        .is_some_and(|name| name.starts_with(b"libchdb"))
}

/// The C++ runtime's exit-time destructor registration (module doc).
///
/// # Safety
/// Called by the C++ runtime with its documented contract: `func(arg)` runs
/// at exit (or when `dso` is unloaded).
#[no_mangle]
pub unsafe extern "C" fn __cxa_atexit(
    func: extern "C" fn(*mut c_void),
    arg: *mut c_void,
    dso: *mut c_void,
) -> c_int {
    if ARMED.load(Ordering::Acquire) && is_engine_object(dso) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return 0;
    }
    let mut next = NEXT_CXA_ATEXIT.load(Ordering::Acquire);
    if next == 0 {
        // SAFETY: a NUL-terminated name; RTLD_NEXT finds the C library's.
        next = unsafe { libc::dlsym(libc::RTLD_NEXT, c"__cxa_atexit".as_ptr()) } as usize;
        if next == 0 {
            // No C library to pass it to: the destructor never runs, as if
            // the process ended by `_exit`.
            return 0;
        }
        NEXT_CXA_ATEXIT.store(next, Ordering::Release);
    }
    // SAFETY: `next` is the C library's `__cxa_atexit`, of this signature.
    let next: CxaAtexit = unsafe { std::mem::transmute::<usize, CxaAtexit>(next) };
    unsafe { next(func, arg, dso) }
}
